"""Whether two one-line descriptions state the same fact, and whether messages state a claim.

Cheap, deterministic and lexical (no model, no dependency): reconcile runs it against every
same-type record for every candidate, and consolidation's evidence check runs it per item.

A description becomes its *content terms*: English words folded (lower case, plural and -ed/-ing
endings, a few irregular forms, a small table of rewordings such as like/love/prefer → prefer,
concise/brief → short), numbers and times kept whole (`9:30`, `3.11`, `10am`, `b12`), number
words as digits; CJK text as single characters (numerals as digits) after a few phrase
rewordings (喜欢 → 爱, 使用 → 用). Stop words, the user as subject ("user", 用户) and light verbs
(use, get, go, make) carry no fact and are dropped. Two terms agree when they are equal or, for
English words, share a prefix of five letters (allergic ~ allergy, deploy ~ deployment).

The rule (`compare`): the words that carry the fact must agree.
- Neither side has a term the other lacks, or only one side has extra terms (a qualifier:
  "allergic to peanuts" ~ "severe peanut allergy"): score = agreeing / all terms (Jaccard).
- Each side has a term the other lacks (peanuts / shellfish, staging / production, Monday /
  Friday, 3.11 / 3.12): a *differing key term*, so a different fact: the score is halved, below
  0.5, and never reaches the default threshold of 0.6.
- Unless the candidate says it replaces something ("now", "moved to", "changed", "switched",
  "instead", "no longer", "postponed", 改为, 现在, 不再, …) and what the fact is about agrees:
  then the differing terms are the old and the new value of the same subject and count once:
  score = agreeing / (agreeing + the larger side's differing terms). "Weekly report due Friday"
  → "Weekly report now due Monday" is 0.75, an update. What the fact is about (its key) agrees
  when the two differ in one place only (the agreeing words that keep their order are anchors;
  differing words between the same anchors, with no other word between them, are one place)
  and that place is not before a side's replacement word, where the sentence names its subject;
  a word only the existing description has, with nothing of the candidate's in its place, is a
  place too (the update would drop it: "Staging cluster runs Kubernetes 1.27" → "The cluster now
  runs Kubernetes 1.29 in production" is two places), while words only the candidate adds are a
  qualifier.
  "Staging cluster runs Kubernetes 1.27" → "Production cluster now runs Kubernetes 1.29"
  differs in two places (and in its subject): a different fact, 0.21; "Deploys to staging on
  Mondays" → "Now deploys to production on Fridays", two places, 0.10. A changed value stated
  without such a word is kept as a separate record: nothing is lost, the newer one is the more
  recently updated.

How often a thing happens reads the same as an adverb or as "every …" (weekly ~ every week,
annually ~ every year), and aspect carries no fact: "still", "already", a tense (chose ~ has
chosen, led ~ is leading), 已经, 正在, 仍然.

The measure is asymmetric only in that the replacement words count on the candidate's side.
tests/fixtures/fact_pairs.tsv holds the labelled pairs it is measured on (bench/fact_pair_rates.py).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import NamedTuple

from ..text import CJK_CLASS, STOPWORDS

_CJK = re.compile(f"[{CJK_CLASS}]")
# A number with its separators (9:30, 3.11, 2026-03-17), or a word (letters and digits, an
# apostrophe inside: user's, don't).
_TERM = re.compile(r"\d+(?:[.:/-]\d+)+(?:am|pm)?|[^\W_]+(?:['’][^\W_]+)?")
PREFIX = 5  # English words sharing this many leading letters agree (allergic ~ allergy)

_STOP = STOPWORDS | frozenset(
    """user users person each every all always usually generally typically often really please
    should must shall might also just never use uses used using get gets got go goes went gone
    make makes made happen happens happened via per etc ever new change changes switch switches
    move moves replace replaces become because since through though although whether either
    neither both yet already still""".split()
)
# Words saying that the candidate replaces an earlier value: dropped from the terms on both sides,
# noted on the candidate's. Past forms and adverbs only: "changes" and "new" are too often a noun
# or part of a name ("small changes", "New York") to mark a replacement; they are stop words.
# "no longer" is read as one word ("longer" alone is a value: longer / shorter answers).
_REPLACES = frozenset(
    """now anymore instead moved changed switched replaced renamed postponed rescheduled delayed
    updated became becomes currently nowadays nolonger""".split()
)
# Those that close a sentence rather than stand between what it is about and the new value.
_TRAILING_REPLACES = frozenset({"anymore", "instead"})
# Irregular past forms, read as the verb (chose ~ choose, led ~ leading).
_IRREGULAR = {
    form: verb
    for verb, forms in {
        "choose": "chose chosen",
        "lead": "led",
        "spend": "spent",
        "teach": "taught",
        "buy": "bought",
        "keep": "kept",
        "run": "ran",
        "begin": "began begun",
        "take": "took taken",
        "give": "gave given",
        "know": "knew known",
        "think": "thought",
        "bring": "brought",
        "catch": "caught",
        "feel": "felt",
        "build": "built",
        "send": "sent",
        "meet": "met",
        "pay": "paid",
        "sell": "sold",
        "tell": "told",
        "win": "won",
        "lose": "lost",
        "wear": "wore worn",
        "drive": "drove driven",
        "fly": "flew flown",
        "grow": "grew grown",
        "eat": "ate eaten",
        "drink": "drank drunk",
        "ride": "rode ridden",
        "speak": "spoke spoken",
        "break": "broke broken",
        "forget": "forgot forgotten",
        "hold": "held",
        "understand": "understood",
        "stand": "stood",
        "sleep": "slept",
    }.items()
    for form in forms.split()
}
_SYNONYMS = {
    **dict.fromkeys(
        """like likes liked love loves loved enjoy enjoys enjoyed prefer prefers preferred favourite
        favorite favourites favorites fan fond want wants wanted""".split(),
        "prefer",
    ),
    **dict.fromkeys("dislike dislikes disliked hate hates hated detest detests".split(), "dislike"),
    **dict.fromkeys("short shorter concise brief terse succinct".split(), "short"),
    **dict.fromkeys("full whole entire complete".split(), "full"),
    **dict.fromkeys("name named names called".split(), "name"),
    **dict.fromkeys("write writes wrote written writing".split(), "write"),
    **dict.fromkeys("kid kids child children".split(), "child"),
    **_IRREGULAR,
    # How often, said as an adverb or as "every …": daily ~ every day, weekly ~ every week.
    "daily": "day",
    "nightly": "night",
    "hourly": "hour",
    "weekly": "week",
    "fortnightly": "fortnight",
    "monthly": "month",
    "quarterly": "quarter",
    **dict.fromkeys("yearly annual annually".split(), "year"),
    **{
        word: str(number)
        for number, word in enumerate(
            "zero one two three four five six seven eight nine ten eleven twelve".split()
        )
    },
    **{short: day for day in ("monday", "tuesday", "thursday", "friday") for short in (day[:3],)},
    "tues": "tuesday",
    "thur": "thursday",
    "thurs": "thursday",
}
_CJK_REPLACES = (
    "现在 改为 改成 改到 改用 换成 换到 换为 不再 推迟 提前 延期 如今 目前 以后 从此 更改 变成 变为".split()
)
# Longer phrases first: 更喜欢 before 喜欢.
_CJK_REWORDINGS = (
    ("更喜欢", "爱"),
    ("喜欢", "爱"),
    ("喜爱", "爱"),
    ("偏好", "爱"),
    ("居住", "住"),
    ("使用", "用"),
    ("采用", "用"),
    ("团队", "组"),
    ("小组", "组"),
    ("从不", "不"),
    ("星期", "周"),
    ("礼拜", "周"),
    ("用户", ""),
    ("我们", ""),
    ("一直", ""),
    ("总是", ""),
    ("通常", ""),
    ("一下", ""),
    # aspect, not fact: already, in progress, still (英 "already", "still" are stop words too)
    ("已经", ""),
    ("正在", ""),
    ("仍然", ""),
    ("依然", ""),
    ("仍旧", ""),
    ("每日", "每天"),
    ("每晚", "每天晚上"),
)
_CJK_STOP = frozenset("的了是在和与及对把被都也很要就还又有个份每我你他她它们这那吗呢吧啊用为着得地给让请到")
_CJK_DIGITS = {char: n for n, char in enumerate("零一二三四五六七八九十")} | {"两": 2}
# A number with its unit is one term (三月 → 3月, 十七日 → 17日, 周五 → 周5), so 三月三日 and 四月三日
# differ; any other CJK character is a term of its own.
_CJK_PIECE = re.compile(
    r"(周?)([零一二三四五六七八九十两]+)([月日号点年天岁时分]?)|(周)(\d+)()|()(\d+)([月日号点年天岁时分])|"
    + _CJK.pattern
)


def _cjk_number(numerals: str) -> str:
    """三 → 3, 十七 → 17, 二十 → 20; a run without 十 digit by digit (二〇二六 is rare in prose)."""
    if "十" not in numerals:
        return "".join(str(_CJK_DIGITS[char]) for char in numerals)
    tens, _, ones = numerals.partition("十")
    value = (_CJK_DIGITS.get(tens[-1], 1) if tens else 1) * 10 + (_CJK_DIGITS.get(ones[:1], 0) if ones else 0)
    return str(value)


def _cjk_piece(match: re.Match[str]) -> str:
    groups = match.groups()
    if groups[1]:
        return f" {groups[0]}{_cjk_number(groups[1])}{groups[2]} "
    if groups[4] or groups[7]:
        return f" {groups[3] or ''}{groups[4] or groups[7]}{groups[8] or ''} "
    return f" {match.group()} "


class Terms(NamedTuple):
    terms: tuple[str, ...]  # distinct content terms, in order
    replaces: bool  # a word saying the text replaces an earlier value
    negated: bool = False  # "not", "never", "doesn't", 不, 没: the text denies what it names
    # Where each term first stands among all the words (stop words counted): two differing
    # terms with a word between them are two places, not one value.
    positions: tuple[int, ...] = ()
    # Where "now", "moved", 改为 … stands when content follows it: the words before it say what
    # the fact is about ("Production cluster | now runs Kubernetes 1.29"); -1 when none does.
    subject_end: int = -1


# A denial: "User is vegetarian" and "User is not vegetarian" share every content word and state
# opposite facts. ("no longer" is a replacement, read as "anymore" before this is looked for.)
_NEGATION = re.compile(
    r"\b(?:not|no|never|cannot|without|none|neither|nor|rather than|instead of)\b|n['’]t\b"
    r"|[不没沒無无别別勿非]"
)


def _stem(word: str) -> str:
    """Light English folding: plural, -ed and -ing endings, a final e (stage ~ staging)."""
    if len(word) <= 3:
        return word
    if word.endswith(("ies", "ied")) and len(word) > 4:
        return word[:-3] + "y"  # studies, studied ~ study
    elif word.endswith("sses") or word.endswith(("shes", "ches", "xes", "zes")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for ending, shortest in (("ing", 6), ("ed", 5)):
        if word.endswith(ending) and len(word) >= shortest:
            word = word[: -len(ending)]
            if len(word) > 2 and word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]  # running → run, preferred → prefer
            break
    if len(word) >= 4 and word.endswith("e"):
        word = word[:-1]
    return word


def _word(raw: str) -> tuple[str | None, bool]:
    """(the term a word gives or None, whether it is a replacement word)."""
    if "'" in raw or "’" in raw:
        base, _, suffix = raw.replace("’", "'").partition("'")
        if suffix == "t":  # don't, isn't: a negation, which the stop words drop too
            return None, False
        raw = base
    if raw in _REPLACES:
        return None, True
    if raw in _STOP or (len(raw) == 1 and raw.isalpha()):
        return None, False
    word = _SYNONYMS.get(raw, raw)
    if any(char.isdigit() for char in word) or not word.isascii():
        return word, False
    word = _stem(word)
    return _SYNONYMS.get(word, word), False


@lru_cache(maxsize=1 << 16)  # reconcile and review weigh every record of a type against others
def fact_terms(text: str) -> Terms:
    """The content terms of a description or message (see the module docstring). Cached:
    reconcile weighs each candidate against every same-type record's description."""
    lowered = re.sub(r"\bno longer\b", " nolonger ", text.lower())
    negated = _NEGATION.search(lowered) is not None
    if _CJK.search(lowered):
        for phrase in _CJK_REPLACES:
            lowered = lowered.replace(phrase, " now ")  # a replacement word where it stood
        for phrase, instead in _CJK_REWORDINGS:
            lowered = lowered.replace(phrase, f" {instead} ")
        lowered = _CJK_PIECE.sub(_cjk_piece, lowered)
    replaces = False
    marker = -1
    positions: dict[str, int] = {}
    for position, raw in enumerate(_TERM.findall(lowered)):
        if _CJK.fullmatch(raw):
            term: str | None = None if raw in _CJK_STOP else raw
        else:
            term, replacing = _word(raw)
            replaces = replaces or replacing
            if replacing and marker < 0 and raw not in _TRAILING_REPLACES:
                marker = position
        if term is not None:
            positions.setdefault(term, position)
    subject_end = marker if any(at > marker for at in positions.values()) else -1
    return Terms(tuple(positions), replaces, negated, tuple(positions.values()), subject_end)


def agree(a: str, b: str) -> bool:
    """Two terms carry the same word: equal, or English words with a common five-letter prefix."""
    if a == b:
        return True
    return (
        a.isascii()
        and b.isascii()
        and a.isalpha()
        and b.isalpha()
        and len(os.path.commonprefix([a, b])) >= PREFIX
    )


class Comparison(NamedTuple):
    score: float  # 0..1, compared with [extraction] similarity
    agreeing: int
    only_existing: tuple[str, ...]  # terms of the existing description the candidate lacks
    only_candidate: tuple[str, ...]  # and the other way round
    replacement: bool  # scored as a changed value of the same subject
    flipped: bool = False  # one side denies what the other states, with no word of replacement
    # Separate places where each side has words the other lacks (between the same agreeing
    # words, no other word between them): staging … 1.27 / production … 1.29 are two.
    places: int = 0
    # A differing place lies in what a description is about (before its "now", "moved", 改为):
    # "Production cluster now runs …" against "Staging cluster runs …".
    subject_differs: bool = False

    @property
    def one_value(self) -> bool:
        """What the fact is about agrees: the two differ, if at all, in one value of it."""
        return self.places <= 1 and not self.subject_differs

    @property
    def differing(self) -> bool:
        """Each side has a key term the other lacks, or one denies what the other states."""
        return bool(self.only_existing and self.only_candidate) or self.flipped

    def explain(self) -> str:
        """What tells the two apart, for a decision's detail."""
        if self.flipped:
            return "one says not"
        if not self.differing:
            return ""
        return f"{'/'.join(self.only_existing[:3])} vs {'/'.join(self.only_candidate[:3])}"


def compare(existing: str, candidate: str, *, replacement: bool = True) -> Comparison:
    """How far `candidate` states the same fact as `existing` (module docstring for the rule).

    replacement=False: a candidate's replacement words do not make a changed value an update
    (two candidates of one reply stating two values are two facts).
    """
    left, right = fact_terms(existing), fact_terms(candidate)
    if not left.terms or not right.terms:
        same = not left.terms and not right.terms and existing.split() == candidate.split()
        return Comparison(1.0 if same else 0.0, 0, left.terms, right.terms, False)
    exact = {term: number for number, term in enumerate(right.terms)}
    free = [number for number, term in enumerate(right.terms) if term not in left.terms]
    pairs: list[tuple[int, int]] = []  # (left term, right term) that agree
    for number, term in enumerate(left.terms):
        match = exact.get(term)
        if match is None:
            match = next((other for other in free if agree(term, right.terms[other])), None)
            if match is not None:
                free.remove(match)
        if match is not None:
            pairs.append((number, match))
    paired_left = {a for a, _ in pairs}
    only_left = tuple(term for number, term in enumerate(left.terms) if number not in paired_left)
    only_right = tuple(right.terms[number] for number in free)
    agreeing = len(pairs)
    places, subject_differs = _places(left, right, pairs, free)
    replacing = replacement and right.replaces
    if left.negated != right.negated and not replacing:
        # "vegetarian" and "not vegetarian": opposite facts, never one record ("User no longer
        # eats meat" says it replaces, and may update "User eats meat").
        score = agreeing / (agreeing + len(only_left) + len(only_right)) / 2
        return Comparison(score, agreeing, only_left, only_right, False, True, places, subject_differs)
    differing = bool(only_left and only_right)
    if differing and replacing and places <= 1 and not subject_differs:
        score = agreeing / (agreeing + max(len(only_left), len(only_right)))
        return Comparison(score, agreeing, only_left, only_right, True, False, places, subject_differs)
    score = agreeing / (agreeing + len(only_left) + len(only_right))
    score = score / 2 if differing else score
    return Comparison(score, agreeing, only_left, only_right, False, False, places, subject_differs)


def _places(left: Terms, right: Terms, pairs: list[tuple[int, int]], free: list[int]) -> tuple[int, bool]:
    """(how many separate places the two differ in, whether one is in what a side is about).

    The agreeing terms that keep their order on both sides are anchors; the terms only one side
    has fall into the gaps between them, a run of adjacent words being one place. A gap holding
    terms of both sides is a changed place (min of the two sides' runs: the rest is a qualifier
    one side adds); a run of the existing side's alone is a place as well (what an update would
    drop), one of the candidate's alone is not (a qualifier it adds)."""
    anchors = _in_order(sorted((left.positions[a], right.positions[b]) for a, b in pairs))
    paired_left = {a for a, _ in pairs}
    sides = (
        (left, [left.positions[n] for n in range(len(left.terms)) if n not in paired_left], 0),
        (right, [right.positions[n] for n in free], 1),
    )
    runs: list[dict[int, list[int]]] = []  # per side: gap -> the first position of each run
    for _, spots, side in sides:
        gaps: dict[int, list[int]] = {}
        previous = -2
        for spot in sorted(spots):
            if spot != previous + 1:
                gap = sum(anchor[side] < spot for anchor in anchors)
                gaps.setdefault(gap, []).append(spot)
            previous = spot
        runs.append(gaps)
    places = 0
    subject_differs = False
    for gap in runs[0].keys() & runs[1].keys():
        places += min(len(runs[0][gap]), len(runs[1][gap]))
        for terms, _, side in sides:
            if terms.subject_end >= 0 and runs[side][gap][0] < terms.subject_end:
                subject_differs = True
    # Words only the existing side has, where the other has none: an update would drop them
    # ("Staging cluster runs …" → "The cluster now runs … in production"), so they are a place
    # too; words only the candidate adds are a qualifier (they lose nothing).
    places += sum(len(spots) for gap, spots in runs[0].items() if gap not in runs[1])
    return places, subject_differs


def _in_order(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest run of pairs increasing on both sides (pairs sorted by the first)."""
    best: list[list[tuple[int, int]]] = []
    for pair in pairs:
        chain = max((chain for chain in best if chain[-1][1] < pair[1]), key=len, default=[])
        best.append([*chain, pair])
    return max(best, key=len, default=[])


def similarity(existing: str, candidate: str, *, replacement: bool = True) -> float:
    """compare(...).score: 0..1, the same fact from [extraction] similarity (0.6) up."""
    return compare(existing, candidate, replacement=replacement).score


class Support(NamedTuple):
    stated: bool
    missing: tuple[str, ...]  # the claim's terms the sources do not carry


def stated(claim: str, sources: Iterable[str], *, values: str = "", whole: bool = False) -> Support:
    """Whether the sources carry the claim's content words: more than half of them (all of them
    with whole=True), and every term with a digit in it (a number, a date, a code such as
    hunter2) of the claim and of `values` (a body whose numbers must be there too)."""
    claimed = fact_terms(claim).terms
    carried = {term for source in sources for term in fact_terms(source).terms}
    needed = [t for t in dict.fromkeys((*claimed, *fact_terms(values).terms)) if any(c.isdigit() for c in t)]

    def found(term: str) -> bool:
        return term in carried or any(agree(term, other) for other in carried)

    missing = tuple(term for term in dict.fromkeys((*claimed, *needed)) if not found(term))
    if not claimed:
        return Support(False, missing)
    hits = sum(found(term) for term in claimed)
    enough = hits == len(claimed) if whole else hits * 2 > len(claimed)
    return Support(enough and not any(term in missing for term in needed), missing)
