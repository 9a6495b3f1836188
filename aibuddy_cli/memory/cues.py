"""The deterministic cue gate of automatic memory extraction (English and Chinese).

A cue only opens the gate: the `extract` model decides what, if anything, to keep. The gate is
meant to open on statements of something lasting (a preference, who the user is, feedback on the
assistant, a project fact) and to stay shut on task chatter, so no model is called for "I need a
train to Boston".

Reading a turn
* Normalised: Unicode NFKC (full-width punctuation and letters become ASCII: ，→ , ：→ : ？→ ?),
  curly quotes and apostrophes made straight (「」『』 become double quotes), whitespace collapsed,
  case-folded, and "im", "dont", "thats"… read as "i'm", "don't", "that's".
* Not read, as pasted or quoted material rather than the user's own words: fenced code blocks
  (``` or ~~~, to the closing fence or the end of the turn); indented code (lines starting with
  a tab or four spaces); quoted lines (``>``); log and trace lines (a leading timestamp or log
  level, ``Traceback``, ``File "…", line N``, ``at f (…)``, ``npm ERR!``, ``SomeError:``); inline
  code spans; short double-quoted spans (a phrase mentioned, not said: 'how do you say "I prefer
  tea" in French?'); whatever follows a line or colon that hands over material ("Proofread my
  bio:", "Here's my draft, can you tighten it?", "帮我润色下面这段："); and any line or
  blank-line-separated paragraph of 800 characters or more. Of the prose left, only the first
  600 characters are read.
* Then split into sentences, each keeping its closing punctuation.

What counts
Patterns describe phenomena, not sentences: first-person preference verbs with adverbs and
punctuation allowed between the words ("Please, always prefer", "I really, really dislike",
"I'd honestly rather", 我真的，真的很讨厌); durable markers (from now on, by default, whenever
you…, if you ever…, 以后都…, 今后, 默认, 每次…都); habits (I usually…, "Sundays I visit my
grandparents", "Lunch is usually a salad at my desk", 我一般…, 我周末一般…, 我每周…, 我一…就…);
the present tense of habits and states in a relative clause or a pseudo-cleft ("The one dish
that I always order is pho", "Running is how I clear my head", "Afternoons are when I answer
email"); identity and biography (name, age, job, where I live or grew up, health and allergies,
family, diet, languages, 我在…上夜班, 我家…, 我养了…); what the user never does (我不抽烟,
我不会开车); corrections and feedback on the assistant (that's wrong…, you keep…, too verbose,
你又…, 别再…); durable project facts (our team uses…, the deadline moved to…, 我们组一直用…). A
bare "no" is no cue: it answers the assistant's question, and what follows it decides. Known
traps are excluded: 以后 as "after" (下班以后), 应该 as "probably" (明天应该会下雨), 叫车 and
帮我叫… against 我叫李雷, "call me a cab" against "call me Sam", 我在找/等… (a task in progress)
against 我在医院上班, 我记下来了 and 记住了 (the user noting what the assistant said) against
记一下：…, a bare 我喜欢 (the options at hand) against 我喜欢安静, 不对 / 我的意思是 correcting a slot of the
request (不对不对，我要的是往返票, 这个日期不对，应该是十五号, 我的意思是找离地铁近的) against
correcting the assistant.

Rules carry flags: a "soft" rule does not count in a one-off sentence (today, at 8, on Friday,
"this slide", 今天, 这次…) unless the sentence also has a durability marker; a "habitual" rule
does not count in a sentence about the here and now at all ("I usually get this warning"); a
"statement" rule does not count in a question ("Is the deadline in April?", 截止日期是哪天？,
我家附近有没有地铁站？); a "durable" rule (I want / need) counts only with a durability marker; a
"choice" rule does not count in a sentence about a booking without one: what is booked or chosen
("I'd prefer a luxury ride", "No, I want the 8:15 one", 订…酒店, 门票, 座位) or one of its slots
(a date, a clock time, how many people, a street address, "instead"). A turn that asks nothing
also opens the gate on a first-person declarative sentence that is not a want, a plan or a thanks
(I need / wanna / plan to / appreciate / I'm all set…), not in the progressive, not about the
here and now and not about a booking ("I coach my son's team on Saturdays", "I have a vegetable
garden"). In Chinese the same holds clause by clause, in a turn without a question, a request, a
thanks or a problem report (吗, ？, 帮我, 请, 谢谢, 还是不行): 我 and a predicate with no aspect,
modal or deictic, which says what the user is, can do, has done, does or has (我恐高, 我会拉二胡,
我去过日本三次, 我没出过国, 我打乒乓球, 我走路上班, 我有一匹马, 我开车十五年了); not an intent or a
transaction (我想…, 我要…, 我订…), the moment (我现在…, 我刚…, 我已经…, 我下午出发, 我坐高铁, a
clause ending in 了 or 吧, 我头疼), an answer among the options (我都行, 我挺满意), the thing at hand
(这个, 那家, 它, 我手头…) or a task given (我老板让我…). A durability marker (每次…都, 一直,
二十年了) lifts the booking test there as it does for the "choice" rules: 我每次出差都住同一家酒店.
A confirmation may come in two parts, anywhere in a turn: approval ("Perfect length.", 很好) and a
wish that it stay as it is ("Keep it.", "don't change a thing", 别改, 请沿用); then it is feedback.
Either part alone is no cue ("Yes, keep it." answers a question; 这段别改 edits the material).

The rules are data, kept apart from this engine: cue_rules_en.py and cue_rules_zh.py, made of
the parts in cue_rules.py.

Cost: pure `re`, stdlib only. Each pattern is compiled once per process, on first use (≈70 ms
for all of them), so importing the module compiles nothing; a turn then costs ≈0.1-0.4 ms, and
at worst a few ms (fuzzed): every pattern runs on sentences cut to the 600-character window.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from . import cue_rules_en as en
from . import cue_rules_zh as zh
from .cue_rules import DURABLE, NOW, ONE_OFF, QUESTION, TASK, LazyPattern, Rule

CUE_KINDS: tuple[str, ...] = ("preference", "identity", "feedback", "project")

PROSE_LIMIT = 600  # characters of a turn's prose that are read
PASTED_PARAGRAPH = 800  # a paragraph at least this long is taken to be pasted material


# --- normalisation and removal of material that is not the user's own prose -------------------

_QUOTES = str.maketrans(
    {
        "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
        "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"',
        "\u300c": '"', "\u300d": '"', "\u300e": '"', "\u300f": '"', "\u00ab": '"', "\u00bb": '"',
    }
)  # fmt: skip
_FENCE = LazyPattern(r"^ {0,3}(`{3,}|~{3,})")
_LOG_LINE = LazyPattern(
    r"""^\s*(?:
        \[?\d{4}-\d{2}-\d{2}[ t]\d                       # 2024-05-02 10:14:03 …
      | \[?\d{1,2}:\d{2}:\d{2}\b                         # 10:14:03 …
      | \[?(?:error|warn|warning|info|debug|trace|fatal|critical)\b\]?\s*[:\]|-]
      | traceback\ \(most\ recent\ call\ last\)
      | file\ ".*",\ line\ \d+
      | at\ \S+\ \(.*\)\s*$
      | npm\ err!
      | [\w.]*(?:error|exception|warning)(?::|$)          # KeyError: 'name'
      | \$[ ]|>>>[ ]|\.\.\.[ ]
    )""",
    re.IGNORECASE | re.VERBOSE,
)
_INLINE_CODE = LazyPattern(r"`[^`\n]*`")
_QUOTED_SPAN = LazyPattern(r'"[^"\n]{1,200}"')
# A colon that hands over material: what follows it is not the user's own statement.
_INTRODUCER = LazyPattern(
    r"\b(?:the\ following|following|below|here'?s|here\ is|here\ are|attached|my\ (?:bio|draft|cv|resume|"
    r"notes|post|essay|letter|code|text|message|email)|translate|summari[sz]e|proofread|rewrite|rephrase|"
    r"paraphrase|turn|convert|format|fix|check|review|polish|shorten|improve|reply\ to|respond\ to|output|"
    r"error|log|logs|says|said|wrote|writes|text|email|message|paragraph|sentence|snippet|quote)\b|下面|"
    r"下列|以下|如下|这段|这句|这篇|这封|这条|这份|这个|这是|翻译|总结|润色|改写|检查|回复|解释|格式化|报错|"
    r"日志|写道|内容",
    re.VERBOSE | re.IGNORECASE,
)
_THIS_AT_END = LazyPattern(r"\b(?:this|these)(?: [\w'-]+){0,2}\s*$", re.IGNORECASE)  # "Can you fix this:"
_NOT_INTRODUCER = LazyPattern(r"\b(?:remember|note|keep in mind|bear in mind)\b|记住|注意", re.IGNORECASE)
_THIS = LazyPattern(r"\bth(?:is|ese)\b", re.IGNORECASE)
_COLON = LazyPattern(":")
_TIME_OR_URL_COLON = LazyPattern(r"\d:\d|\w+://")


def _strip_material(text: str) -> str:
    """The turn's own prose: code, quotes, logs and introduced material removed (see above)."""
    kept: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        marker = _FENCE.match(line)
        if fence is not None:
            if marker and marker.group(1)[0] == fence:
                fence = None
            continue
        if marker:
            fence = marker.group(1)[0]
            continue
        if (
            len(line) >= PASTED_PARAGRAPH
            or line.startswith(("\t", "    "))
            or line.lstrip().startswith(">")
            or _LOG_LINE.match(line)
        ):
            kept.append("")  # keeps paragraph breaks where material was
            continue
        line = _QUOTED_SPAN.sub(" _ ", _INLINE_CODE.sub(" _ ", line))
        cut = _introduced(line)
        if cut is not None:
            kept.append(line[:cut])
            break
        kept.append(line)
        if line.rstrip().endswith("?") and _introduces(line.rstrip().rstrip("?")):
            break  # "Here's my draft, can you tighten it?" + the draft
    paragraphs = re.split(r"\n\s*\n", "\n".join(kept))
    prose = "\n".join(p for p in paragraphs if len(p) < PASTED_PARAGRAPH)
    return prose[:PROSE_LIMIT]


def _introduced(line: str) -> int | None:
    """Where the material introduced by a colon starts in `line`, if it does."""
    intro, guard = _INTRODUCER.search(line), _NOT_INTRODUCER.search(line)
    this = _THIS.search(line)
    for match in _COLON.finditer(line, 0, PROSE_LIMIT):  # nothing further along is read anyway
        start = match.start()
        if guard is not None and guard.start() < start:
            return None  # "Remember this: …", "Note: …" hand over nothing
        if _TIME_OR_URL_COLON.match(line, max(0, start - 1)) or line.startswith("//", start + 1):
            continue
        if (intro is not None and intro.end() <= start) or (
            this is not None and this.start() < start and _THIS_AT_END.search(line, max(0, start - 60), start)
        ):
            return start
    return None


def _introduces(head: str) -> bool:
    """Whether `head` (a line up to a colon or question mark) hands over material."""
    return bool(_INTRODUCER.search(head) or _THIS_AT_END.search(head)) and not _NOT_INTRODUCER.search(head)


def prose(text: str) -> str:
    """NFKC, straight quotes, own prose only (see above), whitespace collapsed; case kept."""
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return re.sub(r"[ \t\f\v]+", " ", _strip_material(text)).strip()


_BARE_CONTRACTION = LazyPattern(
    r"\b(?:(i)(m|ve)|(don|doesn|didn|can|won|isn|aren|wasn|shouldn|wouldn|couldn|haven)(t)|(that|you)(re|s|"
    r"ve))\b"
)


def _apostrophe(match: re.Match[str]) -> str:
    head, tail = [g for g in match.groups() if g is not None]
    return f"{head}'{tail}"


def normalise(text: str) -> str:
    """The turn as the patterns read it: its prose, case-folded, "im"/"dont" read as "i'm"/"don't"."""
    return _BARE_CONTRACTION.sub(_apostrophe, prose(text).casefold())


_SENTENCE = LazyPattern(r"(?:[^!?;。\n.]|\.(?!\s|$))+(?:[!?;。.]+)?")


def sentences(text: str) -> list[str]:
    """A normalised turn split into sentences, each with its closing punctuation."""
    return [s.strip() for s in _SENTENCE.findall(text) if s.strip(" \n.!?;。")]



# English and Chinese, kind by kind, in this order (the data: cue_rules_en.py, cue_rules_zh.py).
_RULES: tuple[Rule, ...] = (
    *en.PREFERENCE,
    *zh.PREFERENCE,
    *en.IDENTITY,
    *zh.IDENTITY,
    *en.FEEDBACK,
    *zh.FEEDBACK,
    *en.PROJECT,
    *zh.PROJECT,
)


def _kinds_in(sentence: str) -> set[str]:
    found: set[str] = set()
    one_off = task = question = None
    durable = bool(DURABLE.search(sentence))
    for rule in _RULES:
        if rule.kind in found or not rule.pattern.search(sentence):
            continue
        if rule.habitual and NOW.search(sentence):
            continue
        if rule.durable and not durable:
            continue
        if rule.soft:
            if one_off is None:
                one_off = bool(ONE_OFF.search(sentence))
            if one_off and not durable:
                continue
        if rule.choice:
            if task is None:
                task = bool(TASK.search(sentence))
            if task and not durable:
                continue
        if rule.statement:
            if question is None:
                question = bool(QUESTION.search(sentence))
            if question:
                continue
        found.add(rule.kind)
    return found


def _english_first_person(sentence: str) -> bool:
    return not (ONE_OFF.search(sentence) or TASK.search(sentence)) and bool(en.FIRST_PERSON.search(sentence))


def _chinese_first_person(sentence: str) -> bool:
    if QUESTION.search(sentence):
        return False
    if not DURABLE.search(sentence) and (ONE_OFF.search(sentence) or TASK.search(sentence)):
        return False
    return bool(zh.FIRST_PERSON.search(sentence))


def find_cues(texts: Iterable[str]) -> list[str]:
    """The kinds of cue (in CUE_KINDS order) that occur in any of the given user turns."""
    found: set[str] = set()
    for text in texts:
        own = prose(text)
        if en.CASED_IDENTITY.search(own):
            found.add("identity")
        folded = _BARE_CONTRACTION.sub(_apostrophe, own.casefold())
        asks = bool(en.REQUEST.search(folded))
        asks_zh = bool(zh.REQUEST.search(folded))
        approved = kept = False
        for sentence in sentences(folded):
            found |= _kinds_in(sentence)
            if not found and not asks and _english_first_person(sentence):
                found.add("preference")
            if not found and not asks_zh and _chinese_first_person(sentence):
                found.add("identity")
            if len(found) == len(CUE_KINDS):
                return list(CUE_KINDS)
            if not QUESTION.search(sentence):
                approved = approved or _approves(sentence)
                kept = kept or _keeps(sentence)
        if approved and kept:
            found.add("feedback")
    return [kind for kind in CUE_KINDS if kind in found]


def _approves(sentence: str) -> bool:
    return bool(en.APPROVAL.search(sentence) or zh.APPROVAL.search(sentence))


def _keeps(sentence: str) -> bool:
    return bool(en.KEPT_AS_IS.search(sentence) or zh.KEPT_AS_IS.search(sentence))
