"""The deterministic cue gate of automatic memory extraction (English and Chinese).

A cue only opens the gate: the `extract` model decides what, if anything, to keep. The gate is
meant to open on first-person statements of something lasting and to stay shut on ordinary task
chatter, so that no model is called for "I need a train to Boston".

Each user turn is reduced to the prose its author wrote, then normalised:

* Unicode NFKC (full-width punctuation and letters become ASCII: ，→ , ：→ : ？→ ?), curly
  quotes and apostrophes become straight ones, 「」『』 become double quotes.
* Not read, as pasted or quoted material rather than the user's own words:
  fenced code blocks (``` or ~~~, to the closing fence or the end of the turn); indented code
  (lines starting with a tab or four spaces); quoted lines (starting with ``>``); log and trace
  lines (a leading timestamp or log level, ``Traceback``, ``File "…", line N``, ``at f (…)``,
  ``npm ERR!``, ``SomeError:``); inline code spans; short double-quoted spans (a phrase
  mentioned, not said: 'how do you say "I prefer tea" in French?'); and everything after a
  colon that introduces material ("Proofread my bio:", "Here's the log:", "帮我润色下面这段：").
* Of what remains, a paragraph (blank-line separated) longer than 800 characters is taken to
  be pasted and dropped, and only the first 600 characters of the turn's prose are read.
* Whitespace is collapsed and the text case-folded; then it is split into sentences.

Patterns describe the phenomena, not sentences: first-person preference verbs with adverbs and
punctuation allowed in between ("Please, always prefer", "I really, really dislike", 我真的，真的很
讨厌); habitual and durable markers (from now on, by default, whenever you…, 以后都…, 今后, 默认,
每次都); identity and biography (name, job, where I live or grew up, allergies, family, diet,
languages); corrections and feedback on the assistant; durable project facts (our team uses…,
the deadline moved to…, 我们组一直用…). Some patterns are "soft": they do not count in a
sentence that is plainly one-off (today, tonight, this time, for this email…, 今天, 这次) unless
the sentence also carries a durability marker (always, every, from now on, 以后, 每次…); project
facts do not count in questions ("Is the deadline in April?", 截止日期是哪天？).

Everything is pure `re` compiled once at import; a turn costs a few dozen regex searches.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import NamedTuple

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
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_LOG_LINE = re.compile(
    r"""^\s*(?:
        \[?\d{4}-\d{2}-\d{2}[ t]\d                       # 2024-05-02 10:14:03 …
      | \[?\d{1,2}:\d{2}:\d{2}\b                         # 10:14:03 …
      | \[?(?:error|warn|warning|info|debug|trace|fatal|critical)\b\]?\s*[:\]|-]
      | traceback\ \(most\ recent\ call\ last\)
      | file\ ".*",\ line\ \d+
      | at\ \S+\ \(.*\)\s*$
      | npm\ err!
      | [\w.]*(?:error|exception|warning)(?::|$)          # KeyError: 'name'
      | \$\ |>>>\ |\.\.\.\ 
    )""",
    re.IGNORECASE | re.VERBOSE,
)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_QUOTED_SPAN = re.compile(r'"[^"\n]{1,200}"')
# A colon that hands over material: what follows it is not the user's own statement.
_INTRODUCER = re.compile(
    r"\b(?:the\ following|following|below|this|these|here'?s|here\ is|here\ are|attached|my\ (?:bio|draft|cv|"
    r"resume|notes|post|essay|letter|code|text|message|email)|translate|summari[sz]e|proofread|rewrite|"
    r"rephrase|paraphrase|turn|convert|format|fix|check|review|polish|shorten|improve|reply\ to|respond\ to|"
    r"output|error|log|logs|says|said|wrote|writes|text|email|message|paragraph|sentence|snippet|quote)\b"
    r"|下面|下列|以下|如下|这段|这句|这篇|这封|这条|这份|这个|这是|翻译|总结|润色|改写|检查|回复|解释|格式化|报错|日志|写道|内容",
    re.VERBOSE,
)
_NOT_INTRODUCER = re.compile(r"\b(?:remember|note|keep in mind|bear in mind)\b|记住|注意")
_TIME_OR_URL_COLON = re.compile(r"\d:\d|\w+://")


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
        if line.startswith(("\t", "    ")) or line.lstrip().startswith(">") or _LOG_LINE.match(line):
            kept.append("")  # keeps paragraph breaks where material was
            continue
        line = _QUOTED_SPAN.sub(" _ ", _INLINE_CODE.sub(" _ ", line))
        cut = _introduced(line)
        if cut is not None:
            kept.append(line[:cut])
            break
        kept.append(line)
    paragraphs = re.split(r"\n\s*\n", "\n".join(kept))
    prose = "\n".join(p for p in paragraphs if len(p) < PASTED_PARAGRAPH)
    return prose[:PROSE_LIMIT]


def _introduced(line: str) -> int | None:
    """Where the material introduced by a colon starts in `line`, if it does."""
    for match in re.finditer(":", line):
        start = match.start()
        if _TIME_OR_URL_COLON.match(line, max(0, start - 1)) or line[start + 1 : start + 3] == "//":
            continue
        head = line[:start].casefold()
        if _INTRODUCER.search(head) and not _NOT_INTRODUCER.search(head):
            return start
    return None


def normalise(text: str) -> str:
    """NFKC, straight quotes, own prose only, whitespace collapsed, case-folded."""
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    prose = _strip_material(text)
    return re.sub(r"[ \t\f\v]+", " ", prose).casefold().strip()


_SENTENCE_END = re.compile(r"[!?;。\n]+|\.(?=\s|$)")


def sentences(text: str) -> list[str]:
    """A normalised turn split into sentences."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


# --- building blocks ----------------------------------------------------------------------------

# English adverbs, hedges and intensifiers that may sit between the words of a cue.
_ADV = (
    r"(?:really|honestly|truly|actually|personally|generally|usually|normally|typically|mostly|mainly|"
    r"always|never|ever|definitely|strongly|much|very|so|just|also|still|quite|totally|absolutely|"
    r"seriously|genuinely|kinda|kind of|sort of|by far|far|way|even|do|does|did|would|will|certainly|"
    r"a lot|a bit|a little|all|both|only|sometimes|often|rarely|frankly|myself|too|already|now|then|"
    r"more|most|much more|generally speaking|in general|for sure|tend to|still|obviously)"
)
_P = r"[\s,;:!.\-\u2013\u2014()]"  # punctuation and space between words
_G = rf"(?:{_P}+{_ADV}\b)*{_P}+"  # a gap: spaces/punctuation with any adverbs in between
_CS = r"(?:^|(?<=[,;:.!?(\u2013\u2014\-\"])\s*|\b(?:please|and|but|so|just|also|then|oh|ok|okay|yes|yeah|btw|fyi|" \
    r"honestly|seriously|actually|again|and please)\s+)"  # the start of a clause
_I = r"\bi(?!')"
_IM = r"\bi(?:'m| am)"
_ID = r"\bi(?:'d| would)"
_IV = r"\bi(?:'ve| have)"
# An object that makes a preference verb a reaction to the thing at hand ("I love this answer").
_DEICTIC = r"(?!\s+(?:this|that|these|those|it\b(?!\s+(?:when|if|whenever))|the (?:idea|answer|one)|your (?:answer|idea|suggestion|reply)))"

# Chinese: adverbs between 我 and the verb, and the punctuation that delimits a clause.
_ZADV = (
    r"(?:比较|很|非常|特别|真的|真|一直|向来|一向|从来|始终|总是|通常|一般|平时|平常|更|最|都|也|还是|其实|个人|"
    r"实在|确实|挺|蛮|不太|太|超级|超|相当|尤其|本来|就|还|十分|极其|有点|一点也|根本|向来)"
)
_ZG = rf"(?:[\s,、!.~\u2026]*{_ZADV})*[\s,、!.~\u2026]*"
_ZCS = r"(?:^|(?<=[,、:;!?.\"\s]))"  # start of a Chinese clause
_ZME = r"(?<![帮给替让为叫请和跟对教问陪找])我"  # 我 as subject, not 帮我/给我/叫我…

_ONE_OFF = re.compile(
    r"\b(?:today|tonight|tomorrow|yesterday|right now|for now|at the moment|just this once|this time|"
    r"this (?:morning|afternoon|evening|weekend|week)|next (?:week|month|monday|tuesday|wednesday|"
    r"thursday|friday|saturday|sunday)|on (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"at \d|\d ?(?:am|pm)\b|for (?:this|that) (?:one|email|report|document|doc|message|answer|reply|file|"
    r"task|trip|meeting|table|comparison|export)|(?:this|that) (?:email|report|message|one|answer|reply|"
    r"document|doc|file|comparison|export|function|paragraph|flight|trip|booking|reservation|header))\b"
    r"|今天|今晚|明天|明早|后天|昨天|刚才|刚刚|这次|这回|马上|待会|等会|一会儿"
)
_DURABLE = re.compile(
    r"\b(?:always|never|every|whenever|from now on|going forward|in future|in the future|by default|"
    r"each time|any time|anytime|all future|usually|generally|as a rule|anymore|any more)\b"
    r"|以后|今后|往后|每次|一直|总是|永远|默认|一律|统一|向来|从来|平时|通常"
)
_QUESTION = re.compile(r"\?\s*$|[吗呢][\s.]*$|哪|什么|多少|几点|几号|谁")


class _Rule(NamedTuple):
    kind: str
    pattern: re.Pattern[str]
    soft: bool  # does not count in a one-off sentence without a durability marker
    statement: bool  # does not count in a question


def _rule(kind: str, pattern: str, *, soft: bool = False, statement: bool = False) -> _Rule:
    return _Rule(kind, re.compile(pattern), soft, statement)


_RULES: tuple[_Rule, ...] = (
    # ---- preference ----------------------------------------------------------------------------
    _rule(  # I (really, really) prefer / dislike / can't stand …
        "preference",
        rf"{_I}{_G}(?:prefer|like|love|adore|enjoy|hate|dislike|detest|loathe|despise|can't stand|"
        rf"cannot stand|can't bear|don't like|do not like|don't want|don't care for|don't enjoy|avoid|"
        rf"favou?r|appreciate|like it|love it|hate it)\b{_DEICTIC}",
        soft=True,
    ),
    _rule(  # I'd (honestly) rather / prefer / always choose
        "preference",
        rf"{_ID}{_G}(?:rather|prefer|choose|pick|go for|take)\b",
        soft=True,
    ),
    _rule(  # want / need / would like only with a durability marker in the sentence
        "preference",
        rf"{_I}(?:'d)?{_G}(?:want|need|would like|like)\b(?=.*\b(?:always|every|whenever|from now on|"
        rf"by default|in future|going forward|each time|all my|all future)\b)",
    ),
    _rule("preference", r"\bmy (?:\w+ )?(?:favou?rite|go-to|preferred)\b|\bfavou?rite (?:\w+ )?is\b"),
    _rule(  # I'm a big fan of … / more of a tea person / not a fan of …
        "preference",
        rf"{_IM}{_G}(?:not )?(?:more of )?(?:an? )?(?:big |huge |real |massive )?(?:fan|lover|person|fanatic|"
        rf"enthusiast)\b|\bnot (?:a |much of a |really a |the )?(?:big |huge )?fan of\b",
    ),
    _rule(  # I usually / never / tend to … (habitual first person)
        "preference",
        rf"{_I} (?:\w+ly )?(?:usually|normally|typically|generally|always|never|tend to|mostly|rarely|"
        rf"seldom|only ever|almost always|almost never|habitually)\b",
        soft=True,
    ),
    _rule(  # (please,) always / never + verb, imperative
        "preference",
        rf"{_CS}(?:please{_G})?(?:always|never)\b(?!{_P}*mind\b)(?!\s+(?:again|ever)\b)",
    ),
    _rule(  # durable time markers addressed to the assistant
        "preference",
        r"\b(?:from now on|going forward|moving forward|from here on(?: out)?|henceforth|for all future|"
        r"in all future|by default|as a rule|as a default|whenever (?:you|possible|i|we)|where(?:ver)? possible|"
        r"every (?:single )?time you|each time you|any ?time you|in (?:the )?future(?=\s*[,.;!:]|\s*$|\s+"
        r"(?:please|always|never|just|use|don't|do|make|remember|ask|keep|avoid|try|i|you|when)\b)|"
        r"every (?:single )?time(?=\s*[,.;!:]|\s*$)|all the time(?=\s*[,.;!:]|\s*$))",
    ),
    _rule(  # … should always / must never …
        "preference",
        r"\b(?:should|must|needs? to|has to|have to|to) (?:\w+ )?(?:always|never)\b",
    ),
    _rule(  # in every / all … reports, answers, emails
        "preference",
        r"\b(?:in|for|on|to|with) (?:every|all|each|any) (?:of )?(?:my |your |the |our )?(?:[\w-]+ ){0,2}"
        r"(?:report|answer|repl(?:y|ie)|response|email|message|summar(?:y|ie)|doc|document|commit|pr|"
        r"snippet|script|code|project|repo|meeting|file|table|chart|recipe|plan|draft|translation)s?\b",
    ),
    _rule(  # keep answers short, … for me
        "preference",
        r"\bkeep (?:your |the |all |my )?(?:answers|replies|responses|explanations|summaries|messages|"
        r"emails|reports|things|it all)\b|\b(?:for me|to me)[,.]? (?:every time|always|please)\b",
    ),
    # Chinese preference
    _rule(
        "preference",
        rf"{_ZME}{_ZG}(?:喜欢|喜爱|偏好|偏爱|讨厌|厌恶|反感|受不了|忍不了|不习惯|习惯|更愿意|愿意|宁愿|宁可|倾向于|"
        rf"不爱|最爱|爱吃|爱喝|爱用|爱看|不用|从不|不碰)(?!这个|那个|这次|这篇|这段|这条|这版|这一|你的这|你这|了)",
        soft=True,
    ),
    _rule(
        "preference",
        rf"{_ZME}(?:的)?(?:一般|通常|平时|平常|向来|一向|从来|从不|总是|一直(?!在)|每天|经常|常常|基本上|很少|习惯)",
        soft=True,
    ),
    _rule("preference", r"我最喜欢的|我最爱的|我的最爱|我(?:比较|更|最)?喜欢的.{0,6}是"),
    _rule(  # 以后/今后 as "from now on", not 下班以后 ("after")
        "preference",
        r"(?:^|(?<=[,、:;!?.\"\s请那就所且记]))(?:以后|今后|往后|此后)(?!的|再说|再|会|可能|就知道|怎么|呢)"
        r"|从今以后|从今往后|从现在(?:开始|起)|从今天(?:开始|起)|从此",
    ),
    _rule("preference", r"(?:^|(?<=[,、:;!?.\"\s请都律统就]))默认(?!的|值|是多少|情况|设置)"),
    _rule(
        "preference",
        r"一律|统一(?:用|使用|采用|写|按|以|成|为)|永远(?:不要|别|不|都|要)|始终|(?<![它他她这那])每次都|"
        r"(?<![它他她这那])每次(?:请|给我|帮我|回答|回复|写|推荐|都要|记得|你)|请(?:一直|始终|总是|永远|务必|一律|统一)",
    ),
    _rule(  # 写周报的时候请… / 回答的时候不要…: "whenever you …"
        "preference",
        r"(?:回答|回复|答复|写|给我|推荐|总结|翻译|解释|汇报|发|整理|起名|命名|列|做)[^,。.!?;]{0,10}的时候[,\s]?"
        r"(?:请|不要|别|都|一定|记得|务必|尽量|永远|一直|只|要|先|用|注意)",
    ),
    # ---- identity ------------------------------------------------------------------------------
    _rule(
        "identity",
        r"\bmy name(?:'s| is)\b|\bmy names? (?:are|is)\b|\b(?:you can |just |please |people |everyone |friends )?"
        r"call me (?!a |an |the |back|later|tomorrow|tonight|when|if |at |on |in |once|before|after|asap|again|"
        r"now|please|up|\d|when)[\w'-]+(?=\s*(?:[,.;!]|$|,? (?:nobody|not|instead|please|for short|is)\b))|"
        rf"\bi go by\b|{_IM} called\b|\bmy pronouns\b",
    ),
    _rule(  # I'm a nurse / an engineer / a PhD student (not "a bit", "a little")
        "identity",
        rf"{_IM}{_G}(?:a|an) (?!bit\b|little\b|lot\b|few\b|moment\b|second\b|minute\b|sec\b|step\b|way\b|day\b|"
        r"week\b|fan\b|big fan\b|huge fan\b|question\b|quick\b|total\b|complete\b|more\b|tea\b|coffee\b)[\w'-]+",
    ),
    _rule(
        "identity",
        rf"{_IM}{_G}(?:type \d |a )?(?:vegan|vegetarian|pescatarian|diabetic|allergic|asthmatic|epileptic|"
        r"pregnant|married|single|divorced|widowed|retired|unemployed|self-employed|freelanc\w+|colou?r[- ]?blind|"
        r"left[- ]handed|right[- ]handed|deaf|blind|dyslexic|autistic|lactose|gluten|celiac|coeliac|based in|"
        r"originally|from|born|native|new to|studying|working (?:as|at|for|in)|living in|in my \w+s|a native)\b",
    ),
    _rule(  # biography verbs
        "identity",
        rf"{_I}{_G}(?:live|lived|grew up|was born|was raised|moved|come from|teach|study|studied|speak|majored|"
        rf"graduated|work (?:as|at|for|in|on the|with|from home|remotely|nights|night shifts|part-time|full-time)|"
        rf"worked (?:as|at|for|in))\b",
        soft=True,
    ),
    _rule(
        "identity",
        rf"{_IV}{_G}(?:been|lived|worked|taught|studied)(?: (?:a|an|working|living|teaching|coding|"
        r"programming|doing|in|at|as|here|there))?\b(?=[^.]*\b(?:for|since|years?|decades?|months?)\b)",
    ),
    _rule(  # health: I have a peanut allergy / I'm allergic to …
        "identity",
        rf"(?:{_I}|{_IV}|\bi've got)(?: have| got)?{_G}(?:a |an )?(?:[\w-]+[ -]){{0,3}}(?:allerg(?:y|ies)|"
        r"intolerance|intolerant|condition|disability|disorder|diabetes|asthma|adhd|autism|dyslexia|migraines?|"
        r"celiac|coeliac|epilepsy)\b|\ballergic to\b",
    ),
    _rule(  # family and pets
        "identity",
        rf"(?:{_I}|{_IV}|\bi've got)(?: have| got)?{_G}(?:\d+|one|two|three|four|five|six|a|an) (?:[\w-]+ ){{0,2}}"
        r"(?:kids?|children|child|sons?|daughters?|cats?|dogs?|brothers?|sisters?|siblings?|grand(?:children|kids)|"
        r"pets?|twins|grandsons?|granddaughters?)\b",
    ),
    _rule(
        "identity",
        r"(?<!to )(?<!for )(?<!with )\bmy (?:wife|husband|partner|spouse|girlfriend|boyfriend|son|daughter|kids|"
        r"children|child|mum|mom|mother|dad|father|parents|brother|sister|dog|cat|baby|family|twins)"
        r"(?:'s name\b|'s \d| (?:is|are|has|have|just|was|lives|works|turned|turns|'s called)\b)",
        soft=True,
    ),
    _rule(
        "identity",
        r"\b(?:first|native|second|mother|home) (?:language|tongue)\b|\bmy (?:job|role|title|position|"
        r"profession|background|major|degree|hometown|home town|nationality|birthday)(?: is| as|'s)\b",
    ),
    _rule(  # I run / lead / manage the … team
        "identity",
        rf"{_I}{_G}(?:run|lead|manage|head|own|am in charge of|look after)(?: the| a| our| my)? (?:[\w-]+ ){{0,3}}"
        r"(?:team|group|department|org|division|company|business|shop|lab|practice|squad)\b",
    ),
    _rule(  # diet
        "identity",
        rf"{_I}{_G}(?:don't|do not|never|can't|cannot) (?:eat|drink|have) (?!it\b|that\b|this\b|anything\b)",
        soft=True,
    ),
    # Chinese identity
    _rule("identity", r"(?<![帮给替让为叫请和跟对])我叫(?![了的车个辆一过他她你人外代出醒起声])\S"),
    _rule(
        "identity",
        r"我的(?:英文|中文)?名字|我姓[^\s,是的]|(?:可以|就|直接|都|请|以后)叫我(?![起一过去来吃回])",
    ),
    _rule(
        "identity",
        r"(?<![帮给替让为叫请和跟对])我是(?!不是|说|在|想|要|问|指|来|去|觉得|真的|因为|为了|从|否|谁|这|那|什么|"
        r"怎么|刚|第一次|故意|开玩笑|随便|认真)",
        soft=True,
    ),
    _rule(
        "identity",
        r"(?<![帮给替让为叫请和跟对])我(?:现在|目前|一直)?在[^,。.!?;的]{1,12}(?:工作|上班|上学|读书|念书|长大|出生|"
        r"生活|定居|任职|实习|做|当|教书|负责)",
    ),
    _rule(
        "identity",
        r"我(?:现在|目前|一直)?住在|我家(?:住|在)|我(?:的)?(?:老家|家乡|祖籍)|我来自|我(?:出生|生)(?:在|于)|"
        r"(?:在|从小在)[^,。]{1,8}长大",
    ),
    _rule("identity", r"我[^,。.!?]{0,8}(?:过敏|不耐受)|我有[^,。]{0,8}(?:病|症)(?!毒)"),
    _rule(
        "identity",
        r"我(?:家)?(?:有|养了|养着|养)[一两二三四五六俩仨\d]*(?:个|只|条|位)?(?:孩子|儿子|女儿|小孩|宝宝|猫|狗|"
        r"兄弟|姐妹|哥哥|姐姐|弟弟|妹妹)",
    ),
    _rule(
        "identity",
        r"(?<![帮给替让为叫请和跟对])我(?:的)?(?:老婆|老公|妻子|丈夫|爱人|太太|先生|女儿|儿子|孩子|父母|爸爸|妈妈|爸|"
        r"妈|对象|男朋友|女朋友|媳妇|宝宝)(?:是|在|今年|叫|已经|刚|经常|上|每天|也|有)",
    ),
    _rule(
        "identity",
        r"我(?:从事|干|做|学|读|教|写)[^,。]{0,10}(?:已经|有|了)?(?:\d+|[一二三四五六七八九十几两多]+)年|"
        r"我(?:的)?(?:本科|研究生|硕士|博士|大学)[^,。]{0,4}(?:学|读|念|是)|我(?:负责|主管|管理)(?!一下)|"
        r"我的(?:职业|工作是|岗位|职位|角色|专业|母语|生日|团队是|星座|血型)|我(?:的)?母语",
    ),
    _rule("identity", r"我(?:吃素|吃斋|不吃(?![了饭完吗])|不喝(?![了完吗])|戒了)"),
    # ---- feedback ------------------------------------------------------------------------------
    _rule(  # No, … / Nope, wrong …
        "feedback",
        r"(?:^|(?<=[.!?,;:]\s)|(?<=actually,\s)|(?<=actually\s))(?:no|nope|nah|wrong|incorrect|not quite|"
        r"not really)(?=\s*[,.!:;\u2013\u2014-]|\s+(?:that|it|this|you|the|we|i|again)\b)"
        r"(?!\s*,?\s*(?:thanks|thank you|problem|worries|rush|need|idea|way|matter)\b)",
    ),
    _rule(
        "feedback",
        r"\bthat(?:'s| is| was)(?: not| still)?(?: quite| totally| completely| all)? (?:wrong|incorrect|not right|"
        r"not correct|inaccurate|a mistake|not true|false|the wrong|not what)\b|\bnot what i (?:asked|wanted|"
        r"meant|said|need|needed)\b|\bwrong again\b|\bgot (?:it|that|this) wrong\b|\byou misunderst\w+|"
        r"\byou misread\b|\bi (?:said|meant)\b(?=[^.?]*\bnot\b)",
    ),
    _rule(
        "feedback",
        rf"\byou(?:'re| are){_G}(?:wrong|mistaken|over\w+ing|under\w+ing|being|making (?:it|this|things)|"
        r"repeating|ignoring|missing|still|too)\b|\byou (?:keep|always|never|still|constantly|repeatedly|"
        r"again|once again)\b(?! (?:can|could|need|want)\b)",
    ),
    _rule(
        "feedback",
        r"\byou (?:should|shouldn't|should not|must|mustn't|must not|need to stop|have to stop|ought to)\b"
        r"(?! (?:be able|have received|see|find)\b)",
    ),
    _rule(
        "feedback",
        rf"{_I} (?:told|asked) you\b|{_IV} (?:told|asked) you\b|\bas i (?:said|told you|mentioned)\b|"
        r"\bhow many times\b|\bi (?:didn't|did not|never) ask(?:ed)? (?:for|you)\b",
    ),
    _rule(  # stop apologising / don't … ever / again
        "feedback",
        rf"{_CS}(?:please{_G})?(?:stop|quit|no more) \w+ing\b|\b(?:don't|do not|never)\b[^.!?]{{0,60}}"
        r"\b(?:ever|again|anymore|any more)\b|\bdon't ever\b|(?:^|\b(?:i |just ))(?:hate|dislike|can't stand) it when\b",
    ),
    _rule(  # please don't + verb (a behaviour of the assistant)
        "feedback",
        rf"{_CS}(?:please{_G})?(?:don't|do not) (?!worry|forget|mind)\w+",
        soft=True,
    ),
    _rule(
        "feedback",
        r"\btoo (?:verbose|wordy|long-winded|chatty|formal|informal|casual|terse|vague|generic|repetitive|"
        r"robotic|preachy)\b|\b(?:answers?|repl(?:y|ies)|responses?|explanations?|messages?|summar(?:y|ies))"
        rf" (?:are|is|were|was|get|getting|keep being)?{_G}too (?:long|short|much|many|detailed|brief)\b|"
        r"(?:^|[,.!;]\s*)too (?:long|short|much)\s*[.!,]",
    ),
    _rule(
        "feedback",
        r"\bnext time\b(?=[,:]|\s+(?:you|please|ask|check|don't|do|try|make|use|remember|just|always|never|"
        r"be|first|before|when)\b)",
    ),
    _rule(
        "feedback",
        rf"{_CS}(?:please{_G})?(?:remember|keep in mind|bear in mind|make a note|note)(?: that| this|,|:| to\b)"
        r"|\b(?:remember|keep in mind|note) (?:that|this)\s*[.!]?$|\bremember that\b",
    ),
    # Chinese feedback
    _rule(
        "feedback",
        rf"{_ZCS}(?:不对|不是的|不是这样|错了|你错了|说错了|搞错了|弄错了|你理解错了)(?![吗吧?])",
    ),
    _rule("feedback", r"你(?:又|总是|老是|每次|一直|怎么又|总)(?!在)"),
    _rule("feedback", r"(?:别|不要|不许|不准)(?:再|老|总|每次|总是|老是|一直|动不动|擅自|自作主张|随便|乱|私自)"),
    _rule(
        "feedback",
        r"这不是我(?:要|想要|问|说|需要)的|我(?:没|没有|并没有|又没)(?:让你|叫你|要你|要求)|我不是(?:这个)?意思|"
        r"我说的是|我的意思是|说过(?:很多次|多少次|好几次|几次|了)|跟你说过|告诉过你",
    ),
    _rule("feedback", r"下次[^,。.!?]{0,10}(?:先|请|记得|别|不要|注意|务必|直接|一定)"),
    _rule(
        "feedback",
        rf"(?:回答|回复|答案|你|写得|说得|讲得|解释得|篇幅|{_ZCS})(?:的)?(?:有点|太|过于|实在太|也太)(?:长|啰嗦|啰唆|"
        r"罗嗦|冗长|多了|复杂|繁琐|简略|短|正式|生硬|官方|笼统|机械)",
    ),
    _rule("feedback", rf"{_ZCS}(?:请)?记住|记好了|记得(?:以后|下次|每次)"),
    _rule("feedback", r"(?<![他她它])你(?:应该|应当|必须|得)(?!是|也|会|知道|可以|能|没|已经|不会|还|很)"),
    # ---- project -------------------------------------------------------------------------------
    _rule(
        "project",
        rf"\b(?:all (?:of )?)?our (?:[\w'-]+ ){{0,2}}(?:team|project|company|org|organi[sz]ation|repos?|repository|"
        r"codebase|services?|product|app|stack|client|customer|deadline|release|sprint|database|db|cluster|infra|"
        r"infrastructure|staging|production|prod|ci|pipeline|backend|frontend|api|department|dept|stand-?up|"
        r"office|year|style guide|conventions?|process|workflow|policy|budget|roadmap|launch|servers?|"
        r"environment|vendor|manager|boss|lead|cto|ceo|teams|code)(?:'s)?"
        rf"{_G}(?:is|are|uses|use|used|runs|run|deploys|deploy|has|have|lives|live|moved|switched|migrated|ships|"
        r"ship|releases|follows|follow|requires|require|needs|starts|start|ends|happens|meets|meet|prefers|"
        r"wants|expects|relies|rely|sits|sit|will|was|were|'s|only|always|never|doesn't|don't|can't|must|"
        r"should|log|write|store|talk|go|went|got)\b",
        statement=True,
    ),
    _rule(
        "project",
        rf"\bwe{_G}(?:use|deploy|ship|release|run|host|follow|switched|moved|migrated|agreed|decided|"
        r"standardi[sz]ed|only|always|never|usually|don't use|do not use|rely|require|store|keep|build|work in|"
        r"meet|have a (?:policy|rule|convention)|write|log|freeze|code in|develop)\b",
        soft=True,
        statement=True,
    ),
    _rule(
        "project",
        rf"\bthe (?:deadline|due date|release|launch|go-live|code freeze|release freeze|merge freeze|freeze|"
        r"demo|milestone|cutover|kick-?off|sprint|retro|audit|handover|rollout)(?: date)?"
        rf"{_G}(?:is|was|has|had|moved|slipped|got|will|'s|starts|ends|happens|changed|shifted|now)\b|"
        r"\b(?:deadline|launch|release|go-live|freeze|rollout|demo) (?:has |was |got |is )?(?:moved|slipped|"
        r"pushed|postponed|brought forward|delayed|rescheduled|shifted)\b",
        soft=True,
        statement=True,
    ),
    _rule(
        "project",
        r"\bthe (?:client|customer|project|product|repo|codebase|team|company|stakeholder)(?:'s [\w-]+)?"
        r" (?:is called|is named|uses|is|are|needs|wants|requires|expects|prefers|runs)\b|"
        r"\b(?:is|are) (?:the )?(?:code ?owners?|owner|tech lead|point of contact|in charge of|responsible for)"
        r"|\b(?:in|for) this (?:repo|codebase|project|team|org|company),? we\b",
        soft=True,
        statement=True,
    ),
    # Chinese project
    _rule(
        "project",
        rf"我们(?:的)?(?:{_ZADV})*(?:用|使用|采用|跑在|部署在|基于|决定|规定|约定|要求|遵循|每周|每月|每天|每个|只在|"
        r"才|封版|发版|从来|的(?:主|核心)?(?:数据库|仓库|代码|服务|项目|产品|客户|技术栈|集群|环境|财年|规范))"
        r"|我们(?:的)?(?:组|团队|部门|公司|项目|项目组|小组|这边|那边|仓库|team|产品|服务|系统)(?:的)?[^,。.!?;]{0,6}?"
        rf"(?:{_ZADV})*(?:用|使用|采用|跑在|部署在|基于|决定|规定|约定|要求|遵循|每周|每月|每天|只在|才|封版|发版|"
        r"从|是|在|上线|迭代|开始)",
        statement=True,
    ),
    _rule(
        "project",
        r"截止(?:日期|时间)?[^,。?]{0,4}?(?:改|推迟|延期|提前|定在|变成|调整|是|在)|(?:上线|发版|发布|封版|交付|"
        r"验收|演示|评审)(?:时间|日期)?(?:推迟|延期|提前|改|定在|调整|挪)|项目(?:代号|名称|名字)?(?:叫|是)|"
        r"客户是|负责人是|(?:组里|团队里|公司里|部门里|我们这里|我们这边)(?:规定|要求|约定|统一|一直|都)|"
        r"(?:测试|生产|预发|线上|开发)环境(?:在|是|用|部署在)|代码冻结|封版",
        statement=True,
    ),
)


def _kinds_in(sentence: str) -> set[str]:
    found: set[str] = set()
    one_off = durable = question = None
    for rule in _RULES:
        if rule.kind in found or not rule.pattern.search(sentence):
            continue
        if rule.soft:
            if one_off is None:
                one_off = bool(_ONE_OFF.search(sentence))
                durable = bool(_DURABLE.search(sentence))
            if one_off and not durable:
                continue
        if rule.statement:
            if question is None:
                question = bool(_QUESTION.search(sentence))
            if question:
                continue
        found.add(rule.kind)
    return found


def find_cues(texts: Iterable[str]) -> list[str]:
    """The kinds of cue (in CUE_KINDS order) that occur in any of the given user turns."""
    found: set[str] = set()
    for text in texts:
        for sentence in sentences(normalise(text)):
            found |= _kinds_in(sentence)
            if len(found) == len(CUE_KINDS):
                return list(CUE_KINDS)
    return [kind for kind in CUE_KINDS if kind in found]
