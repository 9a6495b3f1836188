#!/usr/bin/env bash
# The main job of `make run`: exercise aibuddy on a scratch copy of sample_vault/.
# Usage: scripts/demo.sh PATH/TO/aibuddy SCRATCH_DIR   (the repository is never written to)
set -euo pipefail
aibuddy="$1"
scratch="$2"
here="$(cd "$(dirname "$0")/.." && pwd)"

rm -rf "$scratch"
mkdir -p "$scratch"
cp -Rp "$here/sample_vault" "$scratch/vault"
rm -rf "$scratch/vault/.aibuddy"
export AIBUDDY_VAULT="$scratch/vault"
unset AIBUDDY_MODEL AIBUDDY_USER || true

step() { printf "\n\033[1m$ aibuddy%s\033[0m\n" "$(printf " %q" "$@")"; "$aibuddy" "$@"; }

echo "aibuddy demo on a scratch copy of sample_vault: $AIBUDDY_VAULT"
step memory list
step memory manifest --query "roll back the payments deployment"
step memory recall "how should I format this week's report?"
step memory recall "周报格式"
step memory recall "roll back a bad kubernetes deploy" --limit 1 --json
step memory save standup-time --type project --description "Daily standup moved to 09:45 from December" \
  --body "The payments team standup is at 09:45 Berlin time from December 1."
step memory update standup-time --description "Daily standup is at 09:45 Berlin time"
step memory show standup-time
printf '\n$ aibuddy memory save standup-time … (again: a conflict, exit 4)\n'
"$aibuddy" memory save standup-time --type project --description "duplicate" --body "x" || echo "exit code $?"
printf '\n$ aibuddy memory save ../escape … (a bad name, exit 6)\n'
"$aibuddy" memory save ../escape --type user --description "x" --body "x" || echo "exit code $?"

echo
echo "--- knowledge: review, task, search, read ---"
step kb list
step kb import "$here/sample_vault/knowledge/system/ready/payments-deploy-policy.md" --scope personal
step kb import "$here/README.md" --scope system
step kb publish readme
step task show t1
step kb map --task t1
step kb search "roll back a deploy" --task t1
step kb search "周报格式" --task t1
step kb search '"settlement batch"' --task t1 --json
step kb outline payments-deploy-policy --task t1
step kb read payments-deploy-policy rollback --task t1
step kb read weekly-report-guide-zh 格式 --task t1 --max-chars 80
printf '\n$ aibuddy kb read incident-review-template summary --task t1 (pending: not served, exit 5)\n'
"$aibuddy" kb read incident-review-template summary --task t1 || echo "exit code $?"

echo
echo "--- a task: messages, context, knowledge subagent, extraction ---"
step task add-message t1 --role user "Which rollback steps apply to the payments API during the freeze?"
step task add-message t1 --role assistant "Checking the deployment policy."
step task context t1
step kb ask "How do I roll back the payments API?" --task t1
step memory extract --transcript "$here/scripts/sample-transcript.jsonl" --dry-run
step task consolidate t1
echo
echo "--- knowledge tables: typed rows in CSV, filters, reductions, search ---"
step table list
step table show vendors
step table filter vendors --where 'renewal < date("2027-01-01") and rating >= 3' --columns name,renewal
step table filter vendors --where '"alerting" in services' --json
step table reduce vendors --metric mean --column rating
step table search 对象存储
step table add vendors --row '{"name": "Wise", "city": "London", "rating": 4, "services": ["payouts"], "country": "UK"}'
step table update-rows vendors --where 'name == "PagerDuty"' --set '{"rating": 4}'
step table ask "Which vendors handle card processing?"
printf '\n$ aibuddy table filter vendors --where "__import__(\x27os\x27)" (never evaluated: exit 6)\n'
"$aibuddy" table filter vendors --where "__import__('os')" || echo "exit code $?"
echo
echo "--- what aibuddy keeps safe: values, secrets ---"
printf '\n$ aibuddy table column transform vendors rating --type bool (a value would be lost: exit 6)\n'
"$aibuddy" table column transform vendors rating --type bool || echo "exit code $?"
printf '\n$ aibuddy memory save wifi … --body "password: hunter22" (kept, as you wrote it, with a warning)\n'
"$aibuddy" memory save wifi --type user --description "Office wifi" --body "password: hunter22"
printf '\n$ aibuddy scan (what looks like a credential in the vault: exit 4)\n'
"$aibuddy" scan || echo "exit code $?"
step doctor
echo
echo "Scratch vault left at $scratch/vault (git status of the repository is unchanged)."
