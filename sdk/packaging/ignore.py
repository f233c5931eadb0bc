"""Ignore files in gitignore syntax (``.gcloudignore``, ``.tfjobignore``): pure matching, in linear time.

What is honoured, as git does it:

- blank lines and ``#`` comments are skipped; ``\\#`` and ``\\!`` escape a leading
  ``#`` or ``!``; trailing spaces are dropped unless escaped with ``\\``;
- ``!pattern`` re-includes what an earlier pattern excluded (the last match wins;
  a file inside an excluded directory stays excluded, because the walk never enters it);
- ``pattern/`` matches directories only;
- a pattern with a ``/`` before its end is anchored at the directory holding the
  ignore file; one without matches a name at any depth;
- ``*`` and ``?`` never match ``/``; ``**`` matches across directories
  (``**/x``, ``x/**``, ``a/**/b``); ``[a-z]`` and ``[!a-z]`` classes.

gcloud's ``#!include:FILE`` line (read another ignore file, e.g. ``.gitignore``) is
honoured too; :func:`parse_ignore` takes its text through the ``include`` callback
so this module stays free of I/O.

**No pattern can make matching slow.** A pattern is never a backtracking regular
expression: it is cut into path segments, and each segment into the fixed-length pieces
between its ``*``; a path matches by the greedy two-pointer method (on a mismatch, only the
last ``*`` or ``**`` seen takes one more character or directory), so one test costs at most
(pattern length × path length) steps, whatever the pattern — ``*a*a*a…*c`` or
``**/**/…/x`` included. Identical lines count once (the last one decides), names without
wildcards are looked up in a table, and a file holds at most :data:`MAX_IGNORE_RULES`
patterns of at most :data:`MAX_PATTERN_CHARS` characters. A line that is no pattern
(``[z-a]``, ``[!]``, an unclosed ``[``) is one error naming its file and line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Sequence, Union

from ..errors import ConfigFileError

_INCLUDE = "#!include:"
#: The most patterns the ignore files of one trainer hold (with the files they include).
MAX_IGNORE_RULES = 10_000
#: The longest pattern (a path is at most 4,096 bytes on Linux).
MAX_PATTERN_CHARS = 4096
#: The most work one rule set does, in steps (a rule looked at for a path: 1; a pattern
#: tested against a path: :data:`_TEST_STEPS`), about ten seconds: rules are filed by the
#: names, beginnings and endings they need, so only a set of thousands of wildcard-only
#: patterns (``**/*1*/**``) over thousands of files comes near it; past it, one error says so.
MAX_RULE_WORK = 100_000_000
_TEST_STEPS = 20


class _Star:
    """``**`` as a whole segment: zero or more directories."""

    def __repr__(self) -> str:
        return "**"


_STAR = _Star()


def _any_segment(_: str) -> bool:
    return True


class _Segment:
    """One path segment's glob (``*``, ``?``, ``[...]``), matched without backtracking.

    The glob is cut at its ``*`` into pieces of fixed length (each compiled to a regular
    expression with no repetition); the first piece is matched at the start, the last at the
    end, and each one between at its leftmost place after the one before — which is where
    a match exists if one does (the greedy method for ``*``).
    """

    __slots__ = ("texts", "plain", "lengths", "compiled", "starred", "literal", "tail")

    def __init__(self, pieces: list[tuple[str, bool, int]], starred: bool, literal: str | None, tail: str) -> None:
        # A piece is literal text (matched with str methods) or the source of a regular
        # expression without repetition (compiled the first time it is needed).
        self.texts = [text for text, _, _ in pieces]
        self.plain = [plain for _, plain, _ in pieces]
        self.lengths = [n for _, _, n in pieces]
        self.compiled: list[re.Pattern[str] | None] = [None] * len(pieces)
        self.starred = starred
        self.literal = literal
        #: the literal characters the glob ends with (every name it matches ends so)
        self.tail = tail

    def _regex(self, k: int) -> re.Pattern[str]:
        compiled = self.compiled[k]
        if compiled is None:
            compiled = self.compiled[k] = re.compile(self.texts[k], re.DOTALL)
        return compiled

    def _at(self, k: int, name: str, pos: int) -> bool:
        if self.plain[k]:
            return name.startswith(self.texts[k], pos)
        return self._regex(k).match(name, pos) is not None

    def __call__(self, name: str) -> bool:
        if self.literal is not None:
            return name == self.literal
        lengths = self.lengths
        if not self.starred:
            return len(name) == lengths[0] and self._at(0, name, 0)
        end = len(name)
        if lengths[0] + lengths[-1] > end:
            return False
        if lengths[0] and not self._at(0, name, 0):
            return False
        last = end - lengths[-1]
        if lengths[-1] and not self._at(len(lengths) - 1, name, last):
            return False
        pos = lengths[0]
        for k in range(1, len(lengths) - 1):
            n = lengths[k]
            if not n:
                continue
            if self.plain[k]:
                found = name.find(self.texts[k], pos, last)
                if found < 0:
                    return False
                pos = found + n
            else:
                match = self._regex(k).search(name, pos, last)
                if match is None:
                    return False
                pos = match.end()
        return True


def _segment(glob: str, where: str) -> Callable[[str], bool]:
    """Compile one segment of a pattern (no ``/`` in it)."""
    if not any(c in glob for c in "?[\\"):  # only literal text and stars: cut it at once
        if glob.strip("*") == "" and glob:
            return _any_segment
        cut = glob.split("*")
        starred = len(cut) > 1
        return _Segment([(t, True, len(t)) for t in cut], starred, None if starred else glob, cut[-1])
    pieces: list[tuple[str, bool, int]] = []
    chars: list[str] = []  # the piece's literal characters
    frags: list[str] = []  # the piece as a regular expression
    plain = True
    starred = False
    literal: list[str] | None = []
    tail: list[str] = []

    def close() -> None:
        pieces.append(("".join(chars), True, len(chars)) if plain else ("".join(frags), False, len(frags)))

    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        if c == "*":
            close()
            chars, frags, plain, starred, literal, tail = [], [], True, True, None, []
            while i < n and glob[i] == "*":
                i += 1
            continue
        if c == "?":
            frags.append(".")
            plain, literal, tail = False, None, []
        elif c == "[":
            regex, i = _char_class(glob, i, where)
            frags.append(regex)
            plain, literal, tail = False, None, []
        else:
            if c == "\\" and i + 1 < n:
                i += 1
                c = glob[i]
            chars.append(c)
            frags.append(re.escape(c) if not c.isalnum() else c)
            tail.append(c)
            if literal is not None:
                literal.append(c)
        i += 1
    close()
    if starred and len(pieces) == 2 and not pieces[0][2] and not pieces[1][2]:
        return _any_segment  # a lone "*"
    return _Segment(pieces, starred, "".join(literal) if literal is not None else None, "".join(tail))


def _char_class(glob: str, start: int, where: str) -> tuple[str, int]:
    """The regular expression of the ``[...]`` at ``start`` and the index of its ``]``."""
    i = start + 1
    n = len(glob)
    negate = i < n and glob[i] in "!^"
    if negate:
        i += 1
    items: list[str] = []
    first = True
    while True:
        if i >= n:
            raise ConfigFileError(f"{where} opens a character class '[' that is never closed; write \\[ for a literal bracket")
        c = glob[i]
        if c == "]" and not first:
            break
        first = False
        if c == "\\" and i + 1 < n:
            i += 1
            c = glob[i]
        if i + 2 < n and glob[i + 1] == "-" and glob[i + 2] != "]":
            hi = glob[i + 2]
            j = i + 2
            if hi == "\\" and j + 1 < n:
                j += 1
                hi = glob[j]
            if hi < c:
                raise ConfigFileError(f"{where} has the range [{c}-{hi}], which runs backwards; write [{hi}-{c}]")
            items.append(re.escape(c) + "-" + re.escape(hi))
            i = j + 1
            continue
        items.append(re.escape(c))
        i += 1
    if not items:  # pragma: no cover - "[]" and "[!]" read their "]" as a member, and end unclosed
        raise ConfigFileError(f"{where} holds an empty character class")
    return ("[^" if negate else "[") + "".join(items) + "]", i


Token = Union[_Star, Callable[[str], bool]]


def _match_tokens(tokens: Sequence[Token], segments: Sequence[str]) -> bool:
    """Whether the segments match the tokens, ``**`` taking any number of segments.

    The greedy two-pointer method: on a mismatch only the last ``**`` seen takes one more
    segment, so the cost is at most len(tokens) × len(segments) segment tests.
    """
    nt, ns = len(tokens), len(segments)
    if nt == 2 and tokens[0] is _STAR and tokens[1] is not _STAR:  # a name at any depth
        return tokens[1](segments[-1])  # type: ignore[operator]
    ti = si = 0
    star_ti = -1
    star_si = 0
    while si < ns:
        if ti < nt:
            token = tokens[ti]
            if token is _STAR:
                star_ti, star_si = ti, si
                ti += 1
                continue
            if token(segments[si]):  # type: ignore[operator]
                ti += 1
                si += 1
                continue
        if star_ti < 0:
            return False
        star_si += 1
        si = star_si
        ti = star_ti + 1
    while ti < nt and tokens[ti] is _STAR:
        ti += 1
    return ti == nt


@dataclass(frozen=True)
class IgnoreRule:
    """One line of an ignore file.

    Attributes:
        pattern: the line as written (for messages).
        negate: a ``!`` line (re-include).
        dir_only: a ``pattern/`` line (matches directories only).
        literal: the pattern has no wildcard: it names one path (or one name at any depth).
        where: the file and line it came from (``.tfjobignore:3``).
    """

    pattern: str
    negate: bool
    dir_only: bool
    literal: bool = False
    where: str = ""
    tokens: tuple[Token, ...] = field(default=(), repr=False, compare=False)
    #: the name it matches at any depth (an unanchored pattern without wildcards), for lookups
    name: str | None = field(default=None, repr=False)
    #: the pattern without its ``!``, escapes of a leading ``!``/``#`` and trailing ``/``
    body: str = field(default="", repr=False)

    def matches(self, path: str) -> bool:
        """Whether this pattern matches ``path`` (relative, ``/``-separated) itself."""
        return _match_tokens(self.tokens, path.split("/"))


def _compile(body: str, where: str) -> tuple[tuple[Token, ...], bool, str | None]:
    """Tokens of a pattern (without ``!`` and trailing ``/``), whether it has no wildcard,
    and the name it matches at any depth when it is one plain name."""
    anchored = "/" in body
    parts = body.lstrip("/").split("/") if anchored else [body]
    tokens: list[Token] = [] if anchored else [_STAR]
    literal = re.fullmatch(r"(?:\\.|[^*?\[\\])*\\?", body, re.DOTALL) is not None
    for i, part in enumerate(parts):
        if part == "**" and anchored:
            if i == len(parts) - 1:  # "a/**": everything inside a, at least one more segment
                tokens.append(_any_segment)
            if not tokens or tokens[-1] is not _STAR:
                tokens.append(_STAR)
            continue
        tokens.append(_segment(part, where))
    name = None
    if not anchored and literal:
        seg = tokens[-1]
        name = seg.literal if isinstance(seg, _Segment) else None
    return tuple(tokens), literal, name


def parse_ignore(
    text: str,
    include: Callable[[str], str | None] | None = None,
    _depth: int = 0,
    *,
    name: str = "the ignore file",
    _count: list[int] | None = None,
) -> list[IgnoreRule]:
    """The rules of an ignore file's text, in order.

    Args:
        text: the file's content.
        include: called with the file named by a ``#!include:FILE`` line; returns its
            text, or None when it does not exist (the line is then skipped).
        name: the file, as messages name it.

    Raises:
        ConfigFileError: a line that is no pattern, or more patterns than
            :data:`MAX_IGNORE_RULES` (naming the file and line).
    """
    count = _count if _count is not None else [0]
    rules: list[IgnoreRule] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip("\r")
        where = f"{name} line {number}"
        if line.startswith(_INCLUDE):
            target = line[len(_INCLUDE) :].strip()
            included = include(target) if include is not None and _depth < 5 else None
            if included:
                rules.extend(parse_ignore(included, include, _depth + 1, name=target, _count=count))
            continue
        if not line.strip() or line.startswith("#"):
            continue
        if len(line) > MAX_PATTERN_CHARS:
            raise ConfigFileError(f"{where}: a pattern of {len(line):,} characters; a path is at most {MAX_PATTERN_CHARS:,}")
        # Trailing spaces are dropped unless the last one is escaped.
        stripped = line.rstrip(" ")
        if stripped.endswith("\\") and len(stripped) < len(line):
            stripped += " "
        line = stripped
        negate = line.startswith("!")
        if negate:
            line = line[1:]
        elif line.startswith("\\!") or line.startswith("\\#"):
            line = line[1:]
        dir_only = line.endswith("/") and not line.endswith("\\/")
        body = line.rstrip("/") if dir_only else line
        if not body:
            continue
        count[0] += 1
        if count[0] > MAX_IGNORE_RULES:
            raise ConfigFileError(
                f"{where}: more than {MAX_IGNORE_RULES:,} ignore patterns; leave whole directories out (data/) instead of listing files"
            )
        tokens, literal, plain = _compile(body, f"{where}: the pattern {raw.strip()!r}")
        rules.append(IgnoreRule(raw.strip(), negate, dir_only, literal, where, tokens, plain, body))
    return rules


class RuleSet:
    """Rules compiled for many lookups; the answer is the one the rules give in order (the
    last matching rule decides), found without trying every rule on every path:

    - identical lines count once (the last one: an earlier copy can never decide);
    - a plain name at any depth (``secrets.json``, ``build/``) is looked up in a table;
    - a name glob at any depth that ends in literal characters (``*.log``, ``file?.txt``)
      is filed under that ending, and only the rules filed under an ending of the path's
      last segment are tried on it;
    - the other rules (anchored ones, globs ending in a wildcard) are tried in turn.
    """

    def __init__(self, rules: Sequence[IgnoreRule]) -> None:
        latest: dict[tuple[str, bool, bool], int] = {}
        for i, rule in enumerate(rules):
            latest[(rule.body, rule.negate, rule.dir_only)] = i
        kept = sorted(set(latest.values()))
        self.rules = [rules[i] for i in kept]
        # name → (index of the last file rule naming it, of the last rule of any kind)
        self._names: dict[str, list[int]] = {}
        self._tails: dict[str, list[int]] = {}
        self._segments: dict[str, list[int]] = {}
        self._heads: dict[str, list[int]] = {}
        self._others: list[int] = []
        #: per rule of ``_others``: a text every path it matches holds (a tested path without it is skipped)
        self._needles: dict[int, str] = {}
        for i, rule in enumerate(self.rules):
            tokens = rule.tokens
            last = tokens[-1] if tokens else None
            named = [t.literal for t in tokens if isinstance(t, _Segment) and t.literal is not None]
            if rule.name is not None:
                slot = self._names.setdefault(rule.name, [-1, -1])
                if not rule.dir_only:
                    slot[0] = i
                slot[1] = i
            elif named:
                # A segment without wildcards (``**/build/**/x*``, ``src/**/cache``): only a path
                # holding that very segment can match; the last such segment is filed.
                self._segments.setdefault(named[-1], []).append(i)
            elif isinstance(last, _Segment) and last.tail:
                # The path's last segment must end with the glob's literal ending.
                self._tails.setdefault(last.tail, []).append(i)
            elif isinstance(last, _Segment) and last.plain[0] and last.lengths[0]:
                # ... or begin with its literal beginning (``**/tmp*``).
                self._heads.setdefault(last.texts[0], []).append(i)
            else:
                self._others.append(i)
                pieces = [t for seg in tokens if isinstance(seg, _Segment) for t, plain in zip(seg.texts, seg.plain) if plain and t]
                if pieces:
                    self._needles[i] = max(pieces, key=len)
        self._tail_lengths = sorted({len(tail) for tail in self._tails})
        self._head_lengths = sorted({len(head) for head in self._heads})
        #: the work done so far, against :data:`MAX_RULE_WORK`
        self.work = 0

    def decisive(self, path: str, is_dir: bool) -> IgnoreRule | None:
        """The last rule that matches ``path`` itself, or None."""
        segments = path.split("/")
        last = segments[-1]
        best = -1
        slot = self._names.get(last)
        if slot is not None:
            best = slot[1] if is_dir else slot[0]
        needles = self._needles
        self._spend(len(self._others), path)
        candidates = [i for i in self._others if i > best and (i not in needles or needles[i] in path)]
        if self._segments:
            for segment in set(segments):
                filed = self._segments.get(segment)
                if filed:
                    candidates.extend(i for i in filed if i > best)
        if self._heads:
            for n in self._head_lengths:
                if n > len(last):
                    break
                filed = self._heads.get(last[:n])
                if filed:
                    candidates.extend(i for i in filed if i > best)
        if self._tails:
            for n in self._tail_lengths:
                if n > len(last):
                    break
                filed = self._tails.get(last[-n:])
                if filed:
                    candidates.extend(i for i in filed if i > best)
        candidates.sort(reverse=True)
        rules = self.rules
        for i in candidates:
            rule = rules[i]
            if rule.dir_only and not is_dir:
                continue
            self._spend(_TEST_STEPS, path)
            if _match_tokens(rule.tokens, segments):
                best = i
                break
        return rules[best] if best >= 0 else None

    def _spend(self, steps: int, path: str) -> None:
        self.work += steps
        if self.work > MAX_RULE_WORK:
            example = self.rules[self._others[0]].pattern if self._others else self.rules[-1].pattern
            raise ConfigFileError(
                f"the {len(self.rules):,} ignore patterns take too long to apply to this trainer's files (stopped at {path!r}): "
                f"{len(self._others):,} of them are wildcards only, tried on every path (e.g. {example!r}); "
                "name directories (data/) or file endings (*.log) instead"
            )

    def ignored(self, path: str, is_dir: bool) -> bool:
        """Whether ``path`` itself (relative, ``/``-separated) is excluded."""
        rule = self.decisive(path, is_dir)
        return rule is not None and not rule.negate

    def excluded(self, path: str) -> bool:
        """Whether the file ``path`` is excluded, itself or through a directory above it."""
        parts = path.split("/")
        for i in range(1, len(parts)):
            if self.ignored("/".join(parts[:i]), True):
                return True
        return self.ignored(path, False)


def _as_set(rules: "Sequence[IgnoreRule] | RuleSet") -> RuleSet:
    return rules if isinstance(rules, RuleSet) else RuleSet(rules)


def is_ignored(path: str, is_dir: bool, rules: "Sequence[IgnoreRule] | RuleSet") -> bool:
    """Whether ``path`` itself (relative, ``/``-separated) is excluded by ``rules``.

    The last matching rule wins. Directories above ``path`` are not looked at: a
    directory walk prunes excluded directories; use :func:`is_excluded` for a lone path.
    Give a :class:`RuleSet` when asking about many paths.
    """
    return _as_set(rules).ignored(path, is_dir)


def is_excluded(path: str, rules: "Sequence[IgnoreRule] | RuleSet") -> bool:
    """Whether the file ``path`` is excluded, itself or through a directory above it."""
    return _as_set(rules).excluded(path)
