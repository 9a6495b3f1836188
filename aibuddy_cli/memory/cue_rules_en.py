"""The English rules of the cue gate (cues.py), by kind, and the English-only tests of a turn:
a first-person statement, a request, and the one cue read before case-folding."""

from __future__ import annotations

from .cue_rules import LazyPattern, Rule, rule

# English adverbs, hedges and intensifiers that may sit between the words of a cue.
_ADV = (
    r"(?:[a-z]+ly|always|never|ever|much|very|so|just|also|still|quite|kinda|kind of|sort of|far|way|even|"
    r"do|does|did|would|will|a lot|a bit|a little|all|both|sometimes|often|myself|too|already|now|then|more|"
    r"most|in general|for sure|tend to)"
)  # "[a-z]+ly": really, honestly, usually, generally, personally, definitely, only…
_P = r"[\s,;:!.\-\u2013\u2014()]"  # punctuation and space between words
_G = rf"(?:{_P}+{_ADV}\b)*{_P}+"  # a gap: spaces/punctuation with any adverbs in between
_CS = (  # the start of a clause
    r"(?:^|(?<=[,;:.!?(\u2013\u2014\-\"])\s*|\b(?:please|pls|plz|kindly|and|but|so|just|also|then|oh|ok|"
    r"okay|yes|yeah|btw|fyi|honestly|seriously|actually|again|and please)\s+)"
)
_I = r"\bi(?!')"
_IM = r"\bi(?:'m| am)"
_ID = r"\bi(?:'d| would)"
_IV = r"\bi(?:'ve| have)"
# An object that makes a preference verb a reaction to the thing at hand ("I love this answer").
_DEICTIC = (
    r"(?!\s+(?:this|that|these|those|it\b(?!\s+(?:when|if|whenever))|the (?:idea|answer|one)|your (?:answer|"
    r"idea|suggestion|reply)))"
)


# A verb of the user's in the simple present, the tense of habits and states ("that I drink", "how I
# unwind"): not a want or a modal (the grammar of requests), not a verb of saying or thinking, not in
# the past ("the one I booked") or the progressive.
_PRESENT = (
    r"(?!(?:want|wants|wanna|need|needs|would|will|can|could|should|must|may|might|shall|have to|had|was|"
    r"were|did|got|went|saw|took|made|said|told|meant|mean|think|thought|guess|know|knew|believe|suppose|"
    r"hope|see|ate|paid|left|sent|found|chose|bought|am)\b)[a-z]+(?<!ed)"
)
_HADV = r"(?:(?:[a-z]+ly|always|never|often|still|most|also|just|all|sometimes|mostly) )?"
# A time that recurs: plural time nouns ("Mornings are when I write", "Tuesdays I volunteer").
_TIMES = (
    r"mornings|evenings|afternoons|nights|weekends|weekdays|weeknights|workdays|mondays|tuesdays|wednesdays|"
    r"thursdays|fridays|saturdays|sundays|summers|winters|springs|autumns|holidays|vacations|lunchtimes|"
    r"lunch breaks|days"
)
# How often: a habitual adverbial ("most nights", "twice a week", "on weekends", "every day").
_HABITUALLY = (
    rf"usually|normally|typically|generally|always|never|rarely|seldom|often|sometimes|every ?day|"
    rf"(?:every|each) (?:morning|night|evening|afternoon|week|weekend|month|year|summer|winter|spring|autumn|"
    rf"fall|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|most (?:days|mornings|nights|evenings|"
    rf"weekends|weeks)|(?:on|at) (?:weekends|weekdays|{_TIMES})|in the (?:mornings|evenings|afternoons)|"
    rf"(?:once|twice|\w+ times) (?:a|per) (?:day|week|month|year)|(?<!for )(?<!in )(?<!within )a (?:day|"
    rf"week|month|year)(?=\s*[,.;!]|\s*$)|these days|nowadays"
)


PREFERENCE: tuple[Rule, ...] = (
    rule(  # I (really, really) prefer / dislike / can't stand …
        "preference",
        rf"{_I}(?!\s+would\s+(?:\w+ly\s+)?(?:like|love)\b){_G}(?:(?:don't|do not|didn't|never|not|no longer)"
        rf"(?:{_G}))?(?:prefer|like|love|adore|enjoy|"
        rf"hate|dislike|detest|loathe|despise|can't stand|cannot stand|can't bear|don't like|do not like|"
        rf"don't want|don't care for|don't enjoy|avoid|favou?r|appreciate(?! (?:you|your|the (?:help|"
        rf"assistance|effort|info\w*)|all|everything|that|it|this)\b)|like it|love it|hate it)\b{_DEICTIC}",
        soft=True,
        choice=True,
    ),
    rule(  # I'd (honestly) rather / prefer / always choose
        "preference",
        rf"{_ID}{_G}(?:rather|prefer|choose|pick|go for|take)\b",
        soft=True,
        choice=True,
    ),
    rule(  # want / need / would like: requests, unless the sentence is durable
        "preference",
        rf"{_I}(?:'d)?{_G}(?:want|need|would like|would love|like|love)\b",
        durable=True,
    ),
    rule("preference", r"\bfor (?:the |all )?future(?: reference| \w+)?\s*[:,]"),
    rule("preference", r"\bmy (?:\w+ )?(?:favou?rite|go-to|preferred)\b|\bfavou?rite (?:\w+ )?is\b"),
    rule(  # … is not my thing / not my cup of tea / really my jam
        "preference",
        r"\b(?:is|are|isn't|aren't|'s|was|wasn't)(?: not| never| just| really| really not| just not)? "
        r"(?:quite )?my (?:thing|cup of tea|jam|style|scene|kind of \w+)\b",
        soft=True,
    ),
    rule(  # I'm a big fan of … / more of a tea person / not a fan of …
        "preference",
        rf"{_IM}{_G}(?:not )?(?:more of )?an? (?:[\w-]+ ){{0,2}}(?:fan|lover|person|fanatic|enthusiast|"
        rf"snob)\b|{_IM}{_G}(?:not )?into\b|\bnot (?:a |much of a |really a |the )?(?:big |huge )?fan of\b",
    ),
    rule(  # I usually / never / tend to … (habitual first person)
        "preference",
        rf"{_I} (?:\w+ly )?(?:usually|normally|typically|generally|always|never|tend to|mostly|rarely|"
        rf"seldom|only ever|almost always|almost never|habitually)\b",
        habitual=True,
        statement=True,
    ),
    rule(  # (please,) always / never + verb, imperative
        "preference",
        rf"{_CS}(?:(?:please|pls|plz|kindly){_G})?(?:always|never)\b(?!{_P}*mind\b)(?!\s+(?:again|ever)\b)",
    ),
    rule(  # durable time markers addressed to the assistant
        "preference",
        r"\b(?:from now on|going forward|moving forward|from here on(?: out)?|henceforth|for all future|"
        r"in all future|by default|as a rule|as a default|whenever (?:you|possible|i|we)|"
        r"where(?:ver)? possible|every (?:single )?time you|each time you|any ?time you|"
        r"in (?:the )?future(?=\s*[,.;!:]|\s*$|\s+(?:please|always|never|just|use|don't|do|make|remember|"
        r"ask|keep|avoid|try|i|you|when)\b)|(?:every|each) (?:single )?time(?=\s*[,.;!:]|\s*$)|"
        r"all the time(?=\s*[,.;!:]|\s*$))",
    ),
    rule(  # When you suggest restaurants, … / Use 24-hour time with me
        "preference",
        rf"\b(?:when|whenever|whatever|everything|anything|each time|every time) you (?!have|are|'re|get|"
        rf"can|could|find|finish|see|arrive|know|think|hear|need|want|wake|come|go)[a-z]+\b|\b(?:when|"
        rf"whenever|whatever|everything|anything|each time|every time) (?:you|we) (?:suggest|recommend|"
        rf"write|answer|reply|respond|give|draft|plan|book|summari[sz]e|explain|translate|review|send|make|"
        rf"create|generate|pick|choose|list|format|quote|code|name|schedule)\b|{_CS}(?:(?:please|pls|plz|"
        rf"kindly){_G})?(?:use|speak|talk|write|answer|reply|be|stay|communicate|"
        rf"address)\b[^.!?]{{0,40}}\b(?:with|to) me\b",
    ),
    rule(
        "preference",
        rf"{_IM}{_G}(?:picky|particular|fussy|strict|pedantic|obsessive|old-fashioned|sensitive) about\b|"
        rf"\bmy (?:personal )?preferences? (?:is|are|would be)\b|\bthat's (?:how|what|the way) i (?:\w+)\b|"
        rf"\b(?:if|when|whenever) you (?:\w+ )?ever\b|\bif ever you\b|\b(?:when|whenever|every time|"
        rf"each time|if) i (?:ask|say|send|request|write|need|want|type|share|paste|mention)\b|\b(?:is|"
        rf"are) (?:really |very )?important to me\b|\bmatters? (?:a lot )?to me\b|"
        rf"\bi (?:\w+ )?find (?:[\w-]+ ){{0,4}}(?:easier|harder|better|worse|clearer|more \w+|less \w+)\b|"
        rf"\bi (?:really |just |honestly )?(?:can't|cannot) (?:deal with|handle|take|bear|stomach)\b",
    ),
    rule(
        "preference",
        r"\bmy (?:personal )?(?:rule(?: of thumb)?|policy|principle|motto|habit|approach|philosophy)\b|"
        r"\bwhen(?:ever)? \w+ing\b[^.!?]{0,40}\bfor me\b|\btoo \w+ for me\b",
        soft=True,
    ),
    rule(
        "preference",
        r"\bdefault(?:s)? to\b|\bthe (?:[\w-]+er|more|less|fewer) the (?:better|happier)\b",
    ),
    rule(  # … should always / must never …
        "preference",
        r"\b(?:should|must|needs? to|has to|have to|to) (?:\w+ )?(?:always|never)\b",
    ),
    rule(  # in every / all … reports, answers, emails
        "preference",
        r"\b(?:in|for|on|to|with) (?:every|all|each|any) (?:of )?(?:my |your |the |"
        r"our )?(?:[\w-]+ ){0,2}(?:report|answer|repl(?:y|ie)|response|email|message|summar(?:y|ie)|doc|"
        r"document|commit|pr|snippet|script|code|project|repo|meeting|file|table|chart|recipe|plan|draft|"
        r"translation|release|sprint|deploy|build|pr|merge|ticket|invoice|slide|deck|presentation)s?\b",
    ),
    rule(  # keep answers short, … for me
        "preference",
        r"\bkeep (?:your |the |all |my )?(?:answers|replies|responses|explanations|summaries|messages|"
        r"emails|reports|things|it all)\b|\b(?:for me|to me)[,.]? (?:every time|always|please)\b",
    ),
    rule(  # a relative clause in the present: "The car (that) I drive is…", "Cooking is something I do"
        "preference",
        rf"(?<!\bthe one )(?<!\bthat one )(?<!\bthis one )\b(?:that|which) i {_HADV}{_PRESENT}\b"
        rf"[^.!?;]{{0,40}}?\b(?:is|are)\b|\b(?:is|are)\b[^.!?;]{{0,40}}?\b(?:[a-z]+ (?:that|which)|thing|"
        rf"things|something|part|way) i {_HADV}{_PRESENT}\b"
        rf"|^(?:the|my) (?:[a-z-]+ ){{1,3}}i {_HADV}{_PRESENT}\b[^.!?;]{{0,40}}?\b(?:is|are)\b",
        soft=True,
        statement=True,
        choice=True,
    ),
    rule(  # a pseudo-cleft: "Reading is how I unwind", "Mornings are when I write", "What I enjoy is…"
        "preference",
        rf"\b(?!(?:that|this|it|which|what|there|here|who|so)\b)[a-z'-]+ (?:is|are) (?:\w+ly )?(?:how|when|"
        rf"where|what|why) i {_HADV}{_PRESENT}\b"
        rf"|^(?:(?:and|but|so)\s+)?what i {_HADV}{_PRESENT}\b[^.!?;]{{0,40}}?\b(?:is|are)\b",
        soft=True,
        statement=True,
        choice=True,
    ),
    rule(  # a recurring time as the topic: "Saturdays are for hiking with my brother", "Summers I spend…"
        "preference",
        rf"^(?:(?:and|but|so|also|well)[,]? )?(?:(?:on|in the|during|at|most|all|some|my|our) )?"
        rf"(?!(?:\d+|one|two|three|four|five|six|seven|next|these|those|the)\b)(?:[a-z-]+ )?(?:{_TIMES})\b"
        rf"(?=[^.!?]*\b(?:i|i'm|my|me|we|our|us)\b)",
        habitual=True,
        statement=True,
        choice=True,
    ),
    rule(  # a habit of the user's, said anywhere in the sentence: "Lunch is usually a salad at my desk"
        # (not of a thing or a person at hand: "It always crashes when I click save")
        "preference",
        rf"^(?!(?:it|this|that|these|those|there|they|he|she|you|the|a|an|find|get|book|never mind)\b)"
        rf"(?=[^.!?]*\b(?:i|i'm|i've|my|we|our)\b)[^.!?]*\b(?:{_HABITUALLY})\b(?! mind\b)",
        habitual=True,
        statement=True,
    ),
)


IDENTITY: tuple[Rule, ...] = (
    rule(
        "identity",
        rf"\bmy name(?:'s| is)\b|\bmy names? (?:are|is)\b|\b(?:you can |just |please |people |everyone |"
        rf"friends )?call me (?!a |an |the |back|later|tomorrow|tonight|when|if |at |on |in |once|before|"
        rf"after|asap|again|now|please|up|\d|when)[\w'-]+(?=\s*(?:[,.;!]|$|,? (?:nobody|not|instead|please|"
        rf"for short|is)\b))|\bi go by\b|{_IM} called\b|\bmy pronouns\b",
    ),
    rule(  # I'm a nurse / an engineer / a PhD student (not "a bit", "a little")
        "identity",
        rf"{_IM}{_G}(?:a|an) (?!bit\b|little\b|lot\b|few\b|moment\b|second\b|minute\b|sec\b|step\b|way\b|"
        rf"day\b|week\b|fan\b|big fan\b|huge fan\b|question\b|quick\b|total\b|complete\b|more\b|tea\b|"
        rf"coffee\b)[\w'-]+",
    ),
    rule(
        "identity",
        rf"{_IM}{_G}(?:type \d |a )?(?:vegan|vegetarian|pescatarian|diabetic|allergic|asthmatic|epileptic|"
        rf"pregnant|married|single|divorced|widowed|retired|unemployed|self-employed|freelanc\w+|"
        rf"colou?r[- ]?blind|left[- ]handed|right[- ]handed|deaf|blind|dyslexic|autistic|lactose|gluten|"
        rf"celiac|coeliac|based in|originally|from|born|native|new to|studying|working (?:as|at|for|in)|"
        rf"living in|in my \w+s|a native)\b",
    ),
    rule(  # self-introduction: "one thing about me", "hi, i'm maria"
        "identity",
        r"\b(?:thing|things|bit|fact|something|note|word) about (?:me|myself)\b|\babout me\s*:|^(?:hi|hello|"
        r"hey|hiya|good (?:morning|afternoon|evening))[,!.]? (?:there[,!.]? )?(?:i'm|i am|this is|it's|"
        r"my name's) [\w'-]+\s*[,.!]",
    ),
    rule(
        "identity",
        rf"\bborn and (?:raised|bred)\b|^(?:born|raised|grew up|brought up) in\b|{_IM} the (?:only|sole|"
        rf"lead|main|senior|head|new|founder|owner|ceo|cto|cfo|manager|maintainer)\b",
    ),
    rule(
        "identity",
        rf"\b(?:we're|we are|i'm|i am) expecting (?:a|our|my) (?:first |second |third )?(?:baby|child|"
        rf"kid)\b|{_IM} in my (?:first|second|third|fourth|final|last) year\b|\bi do freelance\b|\b(?:my|"
        rf"a) day job\b",
    ),
    rule(  # I run a small bakery / I own a cafe / I founded a startup
        "identity",
        r"\bi (?:\w+ly )?(?:run|own|founded|co-founded|started|manage) (?:a|an|my|our|the|"
        r"my own) (?:[\w'-]+ ){0,2}(?:business|company|startup|shop|store|bakery|cafe|café|restaurant|bar|"
        r"studio|agency|firm|clinic|practice|team|lab|nonprofit|charity|blog|podcast|channel|newsletter|"
        r"farm|hotel|school|consultancy)\b",
    ),
    rule(  # abilities and senses: I can't read tiny fonts / I use a screen reader
        "identity",
        r"\bi (?:can't|cannot|can not|am unable to|'m unable to) (?:read|see|hear|eat|drink|walk|drive|swim|"
        r"speak|type|stand for long|lift)\b|\bi (?:\w+ly )?(?:use|rely on) (?:a |an )?(?:screen reader|"
        r"wheelchair|hearing aid|cane|braille)|\b(?:just so you know|for the record|for your information|"
        r"you should know)[,:]? (?:i|i'm|i've|my|we|our)\b",
        soft=True,
    ),
    rule(
        "identity",
        r"\bi(?:'ve| have)? (?:\w+ly )?(?:lived|grown up|been living) (?:in|abroad|overseas|here|there|"
        r"all over)\b|\b(?:most|all) of my life\b|\bmy (?:whole|entire) life\b",
    ),
    rule(  # age
        "identity",
        rf"{_IM} \d{{1,2}}\b(?! ?(?:%|minutes?|mins?|hours?|hrs?|km|miles|m\b|pm|am|:|/|euros?|dollars?|"
        rf"pounds?))|\bi(?:'m| am) (?:\d{{1,2}}|[a-z]+ty(?:-[a-z]+)?) years? old\b",
    ),
    rule(  # biography verbs
        "identity",
        rf"{_I}{_G}(?:live|lived|grew up|was born|was raised|moved|come from|teach|study|studied|speak|"
        rf"majored|graduated|work (?:as|at|for|in|on the|with|from home|remotely|nights|night shifts|"
        rf"part-time|full-time)|worked (?:as|at|for|in))\b",
        soft=True,
    ),
    rule(
        "identity",
        rf"{_IV}{_G}(?:been|lived|worked|taught|studied)(?: (?:a|an|working|living|teaching|coding|"
        rf"programming|doing|in|at|as|here|there))?\b(?=[^.]*\b(?:for|since|years?|decades?|months?)\b)",
    ),
    rule(  # health: I have a peanut allergy / I'm allergic to …
        "identity",
        rf"(?:{_I}|{_IV}|\bi've got)(?: have| got)?{_G}(?:a |an )?(?:[\w-]+[ -]){{0,3}}(?:allerg(?:y|ies)|"
        rf"intolerance|intolerant|condition|disability|disorder|diabetes|asthma|adhd|autism|dyslexia|"
        rf"migraines?|celiac|coeliac|epilepsy)\b|\ballergic to\b",
    ),
    rule(
        "identity",
        rf"(?:{_I}|{_IV}|\bi've got)(?: have| got)?{_G}(?:a|an|two|three|\d) (?:\d+|\w+)-(?:year|"
        rf"month)-olds?\b(?! (?:laptop|car|phone|computer|machine|mac|bike|house|tv|printer))|\b(?:night|"
        rf"day|early|late|graveyard|split) shifts?\b(?=[^.!?]*\b(?:most|every|usually|always|weeks|"
        rf"nights)\b)|\bi work shifts\b",
    ),
    rule(  # family and pets
        "identity",
        rf"(?:{_I}|{_IV}|\bi've got)(?: have| got)?{_G}(?:\d+|one|two|three|four|five|six|a|"
        rf"an) (?:[\w-]+ ){{0,2}}(?:kids?|children|child|sons?|daughters?|cats?|dogs?|brothers?|sisters?|"
        rf"siblings?|grand(?:children|kids)|pets?|twins|grandsons?|granddaughters?)\b",
    ),
    rule(
        "identity",
        r"(?<!to )(?<!for )(?<!with )\bmy (?:wife|husband|partner|spouse|girlfriend|boyfriend|son|daughter|"
        r"kids|children|child|mum|mom|mother|dad|father|parents|brother|sister|dog|cat|baby|family|"
        r"twins)(?:'s name\b|'s \d| (?:is|are|has|have|just|was|lives|works|turned|turns|'s called)\b)",
        soft=True,
    ),
    rule(
        "identity",
        r"\b(?:first|native|second|mother|home) (?:language|tongue)\b(?![^.!?]*\?)|\bmy (?:job|role|title|"
        r"position|profession|background|major|degree|hometown|home town|nationality|birthday)(?: is| as|"
        r"'s)\b",
    ),
    rule(  # I run / lead / manage the … team
        "identity",
        rf"{_I}{_G}(?:run|lead|manage|head|own|am in charge of|look after)(?: the| a| our|"
        rf" my)? (?:[\w-]+ ){{0,3}}(?:team|group|department|org|division|company|business|shop|lab|practice|"
        rf"squad)\b",
    ),
    rule(  # diet
        "identity",
        rf"{_I}{_G}(?:don't|do not|never|can't|cannot) (?:eat|drink|have) "
        rf"(?!it\b|that\b|this\b|anything\b|(?:a|any) (?:preference|clue|idea|choice)\b)",
        soft=True,
    ),
)


FEEDBACK: tuple[Rule, ...] = (
    rule(  # Wrong, … / Not quite: … (a bare "no" answers a question: what follows it decides)
        "feedback",
        r"(?:^|(?<=[.!?,;:]\s)|(?<=actually,\s)|(?<=actually\s))(?:wrong|incorrect|not quite)"
        r"(?=\s*[,.!:;\u2013\u2014-]|\s+(?:that|it|this|you|the|we|i|again|"
        r"no)\b)(?!\s*,?\s*(?:thanks|thank you|problem|worries|rush|need|idea|way|matter|that'?s (?:all|"
        r"it|everything|fine|ok|okay|good|great)|that(?:'ll| will) (?:be all|do)|nothing(?: else| more)?|"
        r"i'?m (?:good|fine|ok|okay|all set|done)|all (?:good|set)|we'?re (?:good|done|all set)|not (?:now|"
        r"yet|right now|today)|i think (?:that'?s|i have|i'?m|we'?re))\b)",
    ),
    rule(
        "feedback",
        r"\b(?:that|this|your|the last)(?: answer| reply| response| one| code| fix| suggestion|"
        r" summary)?(?:'s| is| was)(?: not| still)?(?: quite| totally| completely| all| way| so| way|"
        r" a bit)? (?:wrong|incorrect|not right|not correct|inaccurate|a mistake|not true|false|the wrong|"
        r"not what|off|nonsense|useless|made up)\b|\bnot what i (?:asked|wanted|meant|said|need|needed)\b|"
        r"\bwrong again\b|\bgot (?:it|that|this) wrong\b|\byou misunderst\w+|\byou misread\b|"
        r"(?<!sorry, )\bi (?:said|asked for|wanted)\b(?=[^?!]{0,80}?\bnot\b)|\b(?:can|could|would|"
        r"will) you (?:please |pls )?stop \w+ing\b|\bi find (?:it|them|those|these|that|"
        r"such \w+) (?:\w+ )?(?:grating|annoying|distracting|irritating|patronising|patronizing|"
        r"condescending|confusing|hard to read|unreadable|useless|too much)\b|\byou (?:\w+ly )?(?:ignored|"
        r"forgot|skipped|dropped|broke|overwrote|deleted|removed|misspelled|misspelt) (?:my|the|our|what)\b|"
        r"\b(?:less|fewer) [\w-]+(?: [\w-]+)?,? (?:and )?more [\w-]+|\bmore [\w-]+,? (?:and )?(?:less|"
        r"fewer) [\w-]+|\btoo (?:long|short|verbose|wordy|much|many|formal|casual) again\b",
    ),
    rule(
        "feedback",
        rf"\byou(?:'re| are){_G}(?:wrong|mistaken|over\w+ing|under\w+ing|being|making (?:it|this|things)|"
        rf"repeating|ignoring|missing|still|too)\b|\byou (?:keep|always|never|still|constantly|repeatedly|"
        rf"again|once again)\b(?! (?:can|could|need|want)\b)|\byou(?:'ve| have) (?:done|said|made|written|"
        rf"missed|forgotten|ignored|added|used)\b[^.!?]{{0,30}}\b(?:again|before|times|already)\b|"
        rf"\byou(?:'re| are) \w+ing\b[^.?]{{0,40}}\bagain\b",
    ),
    rule(
        "feedback",
        rf"(?<!can )(?<!could )(?<!would )(?<!will )\byou\b[^.?]{{0,50}}\bagain\s*[.!]*$|"
        rf"\byour (?:[\w-]+ ){{1,2}}(?:are|is|were|was|keep|get|come out){_G}?too\b",
        statement=True,
    ),
    rule(
        "feedback",
        r"\b(?:second|third|fourth|fifth|nth|umpteenth|\d+(?:st|nd|rd|th)) time (?:that )?you\b",
    ),
    rule(
        "feedback",
        r"\byou (?:should|shouldn't|should not|must|mustn't|must not|need to stop|have to stop|"
        r"ought to)\b(?! (?:be able|have received|see|find)\b)",
    ),
    rule(
        "feedback",
        rf"{_I} (?:told|asked) you\b|{_IV} (?:told|asked) you\b|\bas i (?:said|told you|mentioned)\b|"
        rf"\bhow many times\b|\bi (?:didn't|did not|never) ask(?:ed)? (?:for|you)\b",
    ),
    rule(  # stop apologising / don't … ever / again
        "feedback",
        rf"{_CS}(?:(?:please|pls|plz|kindly){_G})?(?:stop|quit|no more) \w+ing\b|\b(?:don't|do not|"
        rf"never)\b[^.!?]{{0,60}}\b(?:ever|again|anymore|any more)\b|\bdon't ever\b|(?:^|\b(?:i |"
        rf"just ))(?:hate|dislike|can't stand) it when\b",
    ),
    rule(  # please don't + verb (a behaviour of the assistant)
        "feedback",
        rf"{_CS}(?:(?:please|pls|plz|kindly){_G})?(?:don't|do not) (?!worry|forget|mind)\w+",
        soft=True,
    ),
    rule(
        "feedback",
        rf"\btoo (?:verbose|wordy|long-winded|chatty|formal|informal|casual|terse|vague|generic|repetitive|"
        rf"robotic|preachy)\b|\b(?:answers?|repl(?:y|ies)|responses?|explanations?|messages?|summar(?:y|"
        rf"ies)) (?:are|is|were|was|get|getting|keep being)?{_G}too (?:long|short|much|many|detailed|"
        rf"brief)\b|(?:^|[,.!;]\s*)too (?:long|short|much)\s*[.!,]",
    ),
    rule(
        "feedback",
        r"\bnext time\b(?=[,:]|\s+(?:you|please|ask|check|don't|do|try|make|use|remember|just|always|never|"
        r"be|first|before|when)\b)"
        r"|^(?![^.!?]*\b(?:i|i'll|we|we'll|maybe|perhaps)\b)[^.!?]*\bnext time\s*[.!]*$",
    ),
    rule(  # what the assistant is doing, said to it: "You're mixing up the two APIs."
        "feedback",
        r"(?:^|[.!?,;:]\s*)you(?:'re| are) (?!going\b|welcome\b)\w+ing\b",
        statement=True,
    ),
    # Confirmations are feedback too: an approach the user approves of and wants kept ("perfect,
    # keep doing it that way", "that's the length I want"), not a bare "perfect, thanks".
    rule(
        "feedback",
        r"\bkeep (?:doing|using|writing|formatting)(?: exactly| just)? (?:it|that|this|them|things)\b|"
        r"\bkeep (?:doing|using|writing|formatting)(?: it| that| this| them| things)? (?:that|this|the same) "
        r"(?:way|approach|format|style)\b|\bkeep [\w-]+ing (?:[\w-]+ ){0,2}(?:like (?:this|that)|"
        r"(?:this|that) way)\b|\bkeep (?:it|them|things|(?:the|your) [\w-]+(?: [\w-]+)?) (?:(?:[\w-]+ )?like "
        r"(?:this|that)|"
        r"this (?:way|short|brief|concise|simple|tight)|that way)\b|\bstick (?:with|to) (?:it|this|that|"
        r"(?:this|that|the same) [\w-]+)\s*(?:[.!;,]|$)|\bmore (?:of (?:this|that|these|those)|like this)\b|"
        r"\b(?:carry on|go on|continue) (?:like (?:this|that)|(?:this|that) way)\b",
    ),
    rule(  # praise asking for more of the same: keep it up (not "up to date"), keep this style,
        # more answers like this, I want all my reports like this
        "feedback",
        r"\bkeep (?:it|this|that) up\b(?! to\b)|\bkeep up the (?:good|great|nice|excellent|fine) work\b|"
        r"\bkeep (?:this|that|the same|your) (?:style|format|formatting|tone|structure|layout|length|"
        r"approach|voice|level of detail)\b|(?:^|[,.!;:\u2013\u2014-]\s*)more (?:answers|replies|responses|"
        r"explanations|summaries)(?: [\w-]+)? like (?:this|that)\b|\bi(?: want| like| need|'d like| would "
        r"like) (?:all|every)\b[^.!?]{0,40}?(?:like (?:this|that)|(?:this|that) way)\b",
    ),
    rule(
        "feedback",
        r"\bdo (?:it|them|that|things) (?:like this|this way|the same way) (?:next time|again|every time|"
        r"from now on|going forward)\b",
    ),
    rule(
        "feedback",
        r"\b(?:that|this)(?:'s| is)(?: exactly| precisely| just)? (?:how|what|the [\w-]+(?: [\w-]+)?) "
        r"i(?: want| like| prefer|'m after| am after)\b|\bexactly (?:how|what) i (?:want|like|prefer)\b|"
        r"\b(?:that|this)(?:'s| is) the (?:right |correct |best )?way to (?:do|handle|write|format|"
        r"structure|answer|reply)\b|"
        r"\b(?:that|this)(?:'s| is) how (?:[\w-]+ ){1,3}should (?:look|be|read|sound)\b",
        statement=True,
    ),
    rule(
        "feedback",
        rf"{_CS}(?:(?:please|pls|plz|kindly){_G})?(?:remember|keep in mind|bear in mind|make a note|"
        rf"note)(?: that| this|,|:| to\b| i\b)|{_CS}(?:(?:please|pls|plz|kindly){_G})?(?:keep|"
        rf"bear) in mind\b|\b(?:remember|keep in mind|note) (?:that|this)\s*[.!]?$|\bremember that\b",
    ),
)


PROJECT: tuple[Rule, ...] = (
    rule(
        "project",
        rf"\b(?:all (?:of )?)?our (?:[\w'-]+ ){{0,2}}(?:team|project|company|org|organi[sz]ation|repos?|"
        rf"repository|codebase|services?|product|app|stack|client|customer|deadline|release|sprint|database|"
        rf"db|cluster|infra|infrastructure|staging|production|prod|ci|pipeline|backend|frontend|api|"
        rf"department|dept|stand-?up|office|year|style guide|conventions?|process|workflow|policy|budget|"
        rf"roadmap|launch|servers?|environment|vendor|manager|boss|lead|cto|ceo|teams|code)(?:'s)?{_G}(?:is|"
        rf"are|uses|use|used|runs|run|deploys|deploy|has|have|lives|live|moved|switched|migrated|ships|ship|"
        rf"releases|follows|follow|requires|require|needs|starts|start|ends|happens|meets|meet|prefers|"
        rf"wants|expects|relies|rely|sits|sit|will|was|were|'s|only|always|never|doesn't|don't|can't|must|"
        rf"should|log|write|store|talk|go|went|got)\b",
        statement=True,
    ),
    rule(  # our <any noun> is/uses …, except the logistics of a task at hand
        "project",
        r"\bour (?!(?:[\w'-]+ )?(?:flights?|trains?|table|rooms?|hotel|reservations?|bookings?|orders?|trip|"
        r"taxi|car|ride|luggage|bags?|seats?|tickets?|meeting|call|lunch|dinner|breakfast|plans|way|turn|"
        r"food|waiter|guide|gate|bus|cab|uber|driver|pizza|delivery|package|parcel|"
        r"time)\b)(?:[\w'-]+ ){1,2}(?:is|are|uses|runs|lives|has|is called|is named|signs off|owns|handles|"
        r"decides)\b",
        soft=True,
        statement=True,
    ),
    rule(
        "project",
        r"\bwe(?:'re| are) (?:using|running|moving to|migrating|switching|standardi[sz]ing|"
        r"on (?:[\w.-]+ )?\d)|\b(?:sprint|release|deadline|launch|standup|stand-up|retro|demo|freeze|"
        r"cadence|length|schedule|policy|process|version|branch|review|planning|on-?call|"
        r"rotation)s? (?:has |was |got |is )?(?:changed|moved|switched|slipped|shifted|pushed|postponed|"
        r"rescheduled|brought forward|bumped)(?: back)? to\b",
        soft=True,
        statement=True,
    ),
    rule(
        "project",
        r"^(?:staging|prod|production|pre-?prod|dev|qa|uat|ci|the ci|main|master|the main branch|"
        r"trunk) (?:is|are|runs|lives|uses|sits|deploys|builds|points)\b|\bwe(?:'re| are) (?:mostly |"
        r"primarily |basically )?an? (?!group|party|family|couple|bit|little|few|lot|"
        r"team of \d)[\w-]+ (?:shop|house|company|team|startup|org|agency|place)\b|\b(?:meets?|ships?|"
        r"releases?|deploys?|runs?|happens?|reports?|syncs?|reviews?|bills?|invoices?) (?:quarterly|weekly|"
        r"monthly|daily|yearly|annually|bi-?weekly|fortnightly|nightly)\b",
        statement=True,
    ),
    rule(
        "project",
        r"\b(?:must|has to|have to|is required to|are required to)\b[^.!?]{0,30}\b(?:anything|everything|"
        r"every|all|any)\b|\b(?:anything|everything|every \w+|all \w+)\b[^.!?]{0,30}\b(?:must|has to|"
        r"have to|needs to)\b|^(?:heads[- ]up|fyi|psa|for the record)\b[,:]",
        soft=True,
        statement=True,
    ),
    rule(
        "project",
        r"\bthe (?:[\w-]+ )?(?:warehouse|database|db|backend|frontend|app|api|stack|cluster|servers?|ci|"
        r"pipeline|repo|monorepo|codebase|infra|cloud|gateway|queue|cache|cdn|orm|framework|"
        r"data lake) (?:is|are|runs|uses|lives|sits)\b|\bour (?:[\w-]+ ){0,2}(?:rules?|policy|policies|"
        r"conventions?|process|standards?|guidelines?|setup|stack)\s*(?::|$)|^(?:quick |some |for |"
        r"a bit of |background |project )?context\b\s*[,:]",
        soft=True,
        statement=True,
    ),
    rule(
        "project",
        rf"\bwe{_G}(?:use|deploy|ship|release|run|host|follow|switched|moved|migrated|agreed|decided|"
        rf"standardi[sz]ed|only|always|never|usually|don't use|do not use|rely|require|store|keep|build|"
        rf"work in|pay|meet|have a (?:policy|rule|convention)|write|log|freeze|code in|develop)\b",
        soft=True,
        statement=True,
    ),
    rule(
        "project",
        rf"\bthe (?:deadline|due date|release|launch|go-live|code freeze|release freeze|merge freeze|freeze|"
        rf"demo|milestone|cutover|kick-?off|sprint|retro|audit|handover|rollout)(?: date)?{_G}(?:is|was|has|"
        rf"had|moved|slipped|got|will|'s|starts|ends|happens|changed|shifted|now)\b|\b(?:deadline|launch|"
        rf"release|go-live|freeze|rollout|demo) (?:has |was |got |is )?(?:moved|slipped|pushed|postponed|"
        rf"brought forward|delayed|rescheduled|shifted)\b",
        soft=True,
        statement=True,
    ),
    rule(
        "project",
        r"\bthe (?:client|customer|project|product|repo|codebase|team|company|"
        r"stakeholder)(?:'s [\w-]+)? (?:is called|is named|uses|is|are|needs|wants|requires|expects|prefers|"
        r"runs|decided|agreed|chose|voted|switched|moved|standardi[sz]ed|dropped)\b|\b(?:is|"
        r"are) (?:the )?(?:code ?owners?|owner|tech lead|point of contact|in charge of|responsible for)|"
        r"\b(?:in|for) this (?:repo|codebase|project|team|org|company),? we\b|\bowns (?:the|our|all)\b",
        soft=True,
        statement=True,
    ),
)


# A confirmation said in two parts, anywhere in one turn: approval of what the assistant did
# ("Perfect length.", "Love the bullet points,") and a wish that it stay as it is ("Keep it.",
# "please keep them", "don't change a thing", "stay this concise"). Either alone is no cue: "Yes,
# keep it." answers a question, "Perfect, thanks!" closes a task.
APPROVAL = LazyPattern(
    r"(?<!not )(?<!n't )(?<!not so )\b(?:perfect|great|excellent|brilliant|awesome|amazing|wonderful|"
    r"fantastic|superb|lovely|nice|good|helpful|just right|spot on|nailed it|well done|bravo|(?:much|way|"
    r"far|so much) better|love (?:it|this|that|these|the|how)|like (?:it|this|that) a lot|exactly (?:right|"
    r"what i|how i|like (?:this|that))|\d+/10)\b"
)
KEPT_AS_IS = LazyPattern(
    r"(?:^|[,;:\u2013\u2014-]\s*|\b(?:please|pls|just|so|then|and)\s+)keep (?:it|them|this|that)(?: (?:as is|"
    r"as it is|the same|there))?\s*[.!]*$|\bkeep (?:it|them|these|those|'em) coming\b|\b(?:don't|do not) "
    r"change (?:a thing|anything|it|that|this|them)\b|\bstay (?:(?:this|that|so) [\w-]+|there\s*[.!]*$|"
    r"like (?:this|that))|\bkeep (?:it|them|(?:the|your|these|those) [\w-]+(?: [\w-]+)?) (?:this|that|so) "
    r"(?!way\b)[\w-]+\s*[.!]*$"
)


# English only: in a turn that asks nothing (no "?", no "can you…", "please", or imperative), a
# first-person declarative sentence ("I coach my son's team on Saturdays") that is not a want
# (I need / 'd like / am looking for…), not in the progressive ("I'm running late") and not about
# the here and now counts as a preference cue; nor a plan, a thanks or a booking's slot (I wanna /
# plan to / appreciate / I'm all set / my destination is…; cues.py also leaves out sentences that
# match TASK). Not used for Chinese, where first-person context is too common in task requests
# (我在地铁上…, 我们下周去杭州…): its plain statements have rules of their own (我在…上班, 我每周…,
# 我不抽烟, 我家…).
FIRST_PERSON = LazyPattern(
    r"^(?:(?:also|btw|by the way|and|but|so|ok|okay|oh|fyi|honestly|actually|thanks|thank you|good to know|"
    r"small thing|one more thing|just so you know|for the record|for context|context|note|ps|"
    r"p\.s\.)[,.!:]?\s+)*(?:i|i'm|i am|i've|my|we|we're|we've|our)\b(?!'d (?:like|love to|want|need|"
    r"rather not|be grateful|appreciate)| would (?:like|love to|appreciate)"
    r"|'ll\b| will\b| shall\b)(?!(?:'m| am|'re| are| was|"
    r" were)?(?: not| also| only| just| still| now| actually| really| specifically)* \w+ing\b)"
    r"(?!(?:'m| am| was| were|'ve| have| had|'re| are)?(?: really| also| only| just| still| actually)* "
    r"(?:need|needs|want|wants|wanna|wan|plan|plans|"
    r"require|requires|have to|has to|don't need|do not need|don't mind|do not mind|wouldn't mind|"
    r"don't care|do not care|don't have a preference|do not have a preference|have no preference|"
    r"would not mind|won't|will not|appreciate|thank|thankful|grateful|set|all set|ok with|okay with|"
    r"a ok)\b)(?!(?:'m| am| was| were|'ve| have| had|'re| are)? (?:need|needs|want|wants|'d like|"
    r"would like|looking|trying|getting|having|going|gonna|wondering|thinking|stuck|confused|lost|not sure|"
    r"unsure|curious|done|back|ready|here|there|at|in|on|off|a bit|a little|kind of|sort of|planning|hoping|"
    r"about to|still|just|got|get|can't|cannot|couldn't|can|could|had|will|'ll|would|wanted|"
    r"(?:have|'ve|'ve got|have got) (?:a|an) (?:[\w-]+ )?(?:question|problem|issue|error|bug|doubt|request|"
    r"favou?r|meeting|call|deadline|reservation|booking|appointment|flight|train|few|couple|look|try|go|"
    r"minute|moment|second|sec|chance|feeling|idea|suggestion|quick|small|follow-up)|"
    r"must|should|think|guess|hope|wonder|forgot|found|saw|heard|tried|ran|ordered|booked|missed|sent|"
    r"received|bought|paid|asked|called|told|left|arrived|landed|started|finished|made|wrote|did|didn't|"
    r"don't know|do not know|wonder|feel|felt|believe|suppose|assume|noticed|realised|realized|see|agree|"
    r"meant|mean|prefer not|apologi[sz]e|sorry|fine|ok|okay|good|great|glad|happy|afraid|late|early|busy|"
    r"free|flight|train|order|booking|reservation|ticket|package|computer|laptop|phone|code|script|function|"
    r"app|build|test|destination|arrival|departure|check-?in|check-?out|budget|party|pickup|return|ride|cab|"
    r"appointment|room|hotel|seat|itinerary)\b)"
)
REQUEST = LazyPattern(
    r"\?|\b(?:can|could|would|will) you\b|\bplease\b|\bpls\b|(?:^|[.!;,:]\s*)(?:(?:so|then|and|and then|"
    r"just) )?(?:help|find|book|show|give|"
    r"tell|make|write|draft|plan|get|send|check|fix|translate|summari[sz]e|explain|create|add|remove|list|"
    r"order|schedule|remind|convert|compare|recommend|suggest|look up|search|buy|reserve|call|email|text)\b"
)


# The one cue that needs letter case: "I'm Tomás", "I'm Canadian" (a name, nationality or language after
# I'm) against "I'm sorry", "I'm OK". Read on the prose before case-folding.
CASED_IDENTITY = LazyPattern(
    r"\bI(?:'m| am) (?!(?:OK|Ok|Okay|Sorry|Not|So|Just|Back|Done|Fine|Here|There|Really|Still|Also|In|On|At|"
    r"A|An|The|Very|Good|Glad|Happy|Sure|Afraid|Going|Sad|Tired|Hungry|Ready|Late|Away|Busy|Free|"
    r"New)\b)(?![A-Z]\w*ing\b)[A-Z][a-z\u00c0-\u024f'-]+\b"
)

