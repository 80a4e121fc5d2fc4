"""The hand-written source of the code task bank: base problems and their variants.

A :class:`Problem` is a template (``$name``-style placeholders, :class:`string.Template`) of a spec, a
reference solution, test inputs and spec details; each variant fills the placeholders (and may replace whole
fields) to make one task. Test entries are argument lists (``"[1, 2], 3"`` becomes ``name([1, 2], 3)``) for
functions and whole expressions for classes. Expected values are never written here: the generator computes
them by running the reference.

Spec details (``details``) are what OBSERVE reveals; a leading ``!`` marks a detail the hidden tests depend on
and the visible tests do not show (a required observation).
"""

from __future__ import annotations

from dataclasses import dataclass
from string import Template
from typing import Any

FAMILIES: tuple[str, ...] = ("strings", "lists", "dicts", "math", "parsing", "matrices", "recursion",
                             "dates", "classes")
OOD_FAMILIES: tuple[str, ...] = ("dates", "classes")
"""Families held out entirely as the ``ood`` split."""


@dataclass(frozen=True)
class Problem:
    """A base problem. ``variants`` are dicts of placeholder values; a key naming a field replaces it."""

    family: str
    sig: str
    desc: str
    ref: str
    visible: tuple[str, ...]
    hidden: tuple[str, ...]
    details: tuple[str, ...]
    docs: tuple[str, ...]
    variants: tuple[dict[str, Any], ...]
    example: str = ""
    """Argument list (or expression, for classes) of the ``run_example`` call; default the first hidden test."""
    kind: str = "function"


@dataclass(frozen=True)
class TaskSpec:
    """One concrete task before its tests are run: everything the generator needs."""

    task_id: str
    family: str
    problem: str
    """The base problem's id: variants of one problem always share a split."""
    name: str
    kind: str
    prompt: str
    reference: str
    visible: tuple[str, ...]
    hidden: tuple[str, ...]
    details: tuple[str, ...]
    required: tuple[int, ...]
    docs: tuple[str, ...]
    example: str


def _fill(value: Any, params: dict[str, Any]) -> Any:
    if isinstance(value, str):
        return Template(value).substitute(params)
    if isinstance(value, tuple):
        return tuple(_fill(v, params) for v in value)
    return value


def _call(kind: str, name: str, entry: str) -> str:
    return entry if kind == "class" else f"{name}({entry})"


def expand(problem: Problem) -> list[TaskSpec]:
    """The tasks of one problem, one per variant."""
    fields = {"sig", "desc", "ref", "visible", "hidden", "details", "docs", "example"}
    specs: list[TaskSpec] = []
    problem_id = f"{problem.family}-{problem.variants[0]['name']}"
    for variant in problem.variants:
        params = {k: v for k, v in variant.items() if k not in fields}
        merged = {f: variant.get(f, getattr(problem, f)) for f in fields}
        filled = {f: _fill(v, params) for f, v in merged.items()}
        name = params["name"]
        details = tuple(d.lstrip("!") for d in filled["details"])
        required = tuple(i for i, d in enumerate(filled["details"]) if d.startswith("!"))
        what = "class" if problem.kind == "class" else "function"
        prompt = f"Write a Python {what} `{name}`.\n\n{filled['sig']}\n\n{filled['desc']}"
        visible = tuple(_call(problem.kind, name, e) for e in filled["visible"])
        hidden = tuple(_call(problem.kind, name, e) for e in filled["hidden"])
        example = _call(problem.kind, name, filled["example"]) if filled["example"] else hidden[0]
        specs.append(TaskSpec(
            task_id=f"code-{problem.family}-{name}", family=problem.family, problem=problem_id, name=name,
            kind=problem.kind,
            prompt=prompt, reference=filled["ref"].strip() + "\n", visible=visible, hidden=hidden,
            details=details, required=required, docs=filled["docs"], example=example,
        ))
    return specs


def all_specs() -> list[TaskSpec]:
    """Every task of the bank, in a fixed order."""
    return [spec for problem in PROBLEMS for spec in expand(problem)]


# ---------------------------------------------------------------------------------------------------------
# strings
# ---------------------------------------------------------------------------------------------------------
_STRINGS = (
    Problem(
        family="strings",
        sig="def $name(text: str) -> int",
        desc="Return how many characters of `text` are $what.",
        ref='''
def $name(text):
    count = 0
    for ch in text.lower():
        if ch in "$chars":
            count += 1
    return count
''',
        visible=("'hello world'", "'xyz'"),
        hidden=("''", "'AEIOU bcd'", "'Programming In Python'", "'12345 abcdef'", "'!!!'", "'aAbBcC'",
                "'The Quick Brown Fox'", "'DEADBEEF 42'", "'y'"),
        details=("!Upper-case and lower-case letters are counted alike.",
                 "The text may be empty; the count is then 0.",
                 "Characters outside the set, such as spaces and punctuation, are not counted."),
        docs=("str-case", "str-membership"),
        variants=(
            dict(name="count_vowels", what="vowels (a, e, i, o, u)", chars="aeiou"),
            dict(name="count_consonants", what="consonants (the letters other than a, e, i, o, u)",
                 chars="bcdfghjklmnpqrstvwxyz"),
            dict(name="count_hex_digits", what="hexadecimal digits (0-9 and a-f)", chars="0123456789abcdef"),
        ),
    ),
    Problem(
        family="strings",
        sig="def $name(text: str) -> bool",
        desc="Return True when `text` reads the same forwards and backwards, looking only at $what.",
        ref='''
def $name(text):
    cleaned = [ch.lower() for ch in text if ch.$keep()]
    return cleaned == cleaned[::-1]
''',
        visible=("'racecar'", "'hello'"),
        hidden=("'A man, a plan, a canal: Panama'", "''", "'No lemon, no melon'", "'ab'",
                "'Was it a car or a cat I saw?'", "'12321'", "'1a2'", "'Aa'", "'x'", "'abca'"),
        details=("!Case is ignored: 'Aa' is a palindrome.",
                 "!Characters other than $what are skipped entirely.",
                 "The empty string is a palindrome."),
        docs=("str-isalpha", "slicing"),
        variants=(
            dict(name="is_palindrome", what="letters and digits", keep="isalnum"),
            dict(name="is_letter_palindrome", what="letters", keep="isalpha"),
        ),
    ),
    Problem(
        family="strings",
        sig="def $name(text: str) -> str",
        desc="Shift every ASCII letter of `text` $shift places $direction in the alphabet (a Caesar cipher).",
        ref='''
def $name(text):
    out = []
    for ch in text:
        if ch.isascii() and ch.isalpha():
            base = ord("A") if ch.isupper() else ord("a")
            out.append(chr((ord(ch) - base + $k) % 26 + base))
        else:
            out.append(ch)
    return "".join(out)
''',
        visible=("'abc'", "'hello'"),
        hidden=("'xyz'", "'Hello, World!'", "''", "'ABC xyz'", "'Zebra-42'", "'a'", "'The quick brown fox'",
                "'caf\\u00e9'", "'mnop'"),
        details=("!Letters wrap around the end of the alphabet.",
                 "!Upper-case letters stay upper-case and lower-case letters stay lower-case.",
                 "Everything that is not an ASCII letter (digits, spaces, punctuation, accented letters) is "
                 "copied unchanged."),
        docs=("ord-chr", "divmod-modulo"),
        variants=(
            dict(name="caesar_shift3", shift="3", direction="forward", k="3"),
            dict(name="rot13", shift="13", direction="forward", k="13"),
            dict(name="caesar_back5", shift="5", direction="back", k="-5"),
            dict(name="shift_one", shift="1", direction="forward", k="1"),
        ),
    ),
    Problem(
        family="strings",
        sig="def $name(text: str) -> str",
        desc="Run-length encode `text`: each maximal run of one repeated character becomes $how.",
        ref='''
def $name(text):
    if not text:
        return ""
    parts = []
    current, count = text[0], 1
    for ch in text[1:]:
        if ch == current:
            count += 1
        else:
            parts.append($fmt)
            current, count = ch, 1
    parts.append($fmt)
    return "".join(parts)
''',
        visible=("'aaabcc'", "'abbb'"),
        hidden=("''", "'a'", "'aaaaaaaaaaaa'", "'aabbaa'", "'xyz'", "'zzzzy'", "'  '", "'abba'", "'1112'"),
        details=("!An empty string encodes to an empty string.",
                 "Runs are maximal: 'aabbaa' has three runs.",
                 "!Counts above 9 are written in full, e.g. twelve 'a's give a count of 12."),
        docs=("str-split-join", "str-format"),
        variants=(
            dict(name="run_length_encode", how="the character followed by the run length",
                 fmt="current + str(count)"),
            dict(name="run_length_prefix", how="the run length followed by the character",
                 fmt="str(count) + current"),
            dict(name="run_length_compact",
                 how="the character followed by the run length, where a length of 1 is left out",
                 fmt='current + (str(count) if count > 1 else "")'),
        ),
    ),
    Problem(
        family="strings",
        sig="def $name(text: str) -> str",
        desc="Return `text` in headline case: capitalize words longer than $n letters and lower-case the "
             "rest; words are separated by single spaces in the result.",
        ref='''
def $name(text):
    words = text.split()
    out = []
    for i, word in enumerate(words):
        if i == 0 or len(word) > $n:
            out.append(word.capitalize())
        else:
            out.append(word.lower())
    return " ".join(out)
''',
        visible=("'the lord of the rings'", "'war and peace'"),
        hidden=("''", "'   spaced   out  words '", "'a tale of two cities'", "'THE END'", "'of mice and men'",
                "'x'", "'it is what it is'", "'hello'", "'one  two'"),
        details=("!Runs of whitespace collapse to one space; leading and trailing whitespace is dropped.",
                 "!The first word is always capitalized, whatever its length.",
                 "Capitalized means the first letter upper-case and the rest lower-case ('THE' becomes 'The')."),
        docs=("str-case", "str-split-join"),
        variants=(
            dict(name="headline_case", n="3"),
            dict(name="title_long_words", n="4"),
        ),
    ),
    Problem(
        family="strings",
        sig="def $name(text: str) -> str",
        desc="Return the longest word of `text` (words are separated by whitespace).",
        ref='''
def $name(text):
    best = ""
    for word in text.split():
        if len(word) $cmp len(best):
            best = word
    return best
''',
        visible=("'I love programming'", "'hi there'"),
        hidden=("''", "'one two six'", "'alpha beta gamma'", "'  lots   of   space  '", "'x'",
                "'abc abd abe'", "'short longer longest'", "'same size word'", "'tie ties tied'"),
        details=("!When several words share the longest length, return the $tie of them.",
                 "!An empty or all-whitespace text gives the empty string.",
                 "Punctuation counts as part of a word."),
        docs=("str-split-join", "min-max-key"),
        variants=(
            dict(name="longest_word", cmp=">", tie="first"),
            dict(name="longest_word_last", cmp=">=", tie="last"),
        ),
    ),
    Problem(
        family="strings",
        sig="def $name(text: str) -> str",
        desc="Mask `text` for display: replace every character except the last $n with '$ch'.",
        ref='''
def $name(text):
    if len(text) <= $n:
        return text
    return "$ch" * (len(text) - $n) + text[-$n:]
''',
        visible=("'1234567890'", "'secretpassword'"),
        hidden=("''", "'abc'", "'abcd'", "'abcde'", "'12'", "'  spaced  '", "'x'", "'5555444433331111'"),
        details=("!A text of $n characters or fewer is returned unchanged.",
                 "Spaces are masked like any other character."),
        docs=("slicing", "str-format"),
        variants=(
            dict(name="mask_card", n="4", ch="#"),
            dict(name="mask_tail2", n="2", ch="*"),
            dict(name="mask_phone", n="3", ch="x"),
        ),
    ),
    Problem(
        family="strings",
        sig="def $name(text: str) -> str",
        desc="$what",
        ref='''
def $name(text):
    words = text.split()
    return " ".join($expr)
''',
        visible=("'hello big world'", "'one two'"),
        hidden=("''", "'single'", "'  padded   text  '", "'a b c d'", "'Mixed CASE words'", "'tabs\\tand\\nnewlines'",
                "'racecar level'"),
        details=("!Whitespace runs collapse to one space and the result has no leading or trailing spaces.",
                 "The empty string gives the empty string."),
        docs=("str-split-join", "slicing"),
        variants=(
            dict(name="reverse_words", what="Return `text` with the order of its words reversed.",
                 expr="reversed(words)"),
            dict(name="reverse_each_word", what="Return `text` with the letters of each word reversed, "
                 "keeping the words in place.", expr="(w[::-1] for w in words)"),
        ),
    ),
    Problem(
        family="strings",
        sig="def $name(text: str, part: str) -> int",
        desc="Count the occurrences of `part` in `text`, $how.",
        ref='''
def $name(text, part):
    if not part:
        return 0
    count = 0
    i = text.find(part)
    while i != -1:
        count += 1
        i = text.find(part, i + $step)
    return count
''',
        visible=("'banana', 'b'", "'hello world', 'o'"),
        hidden=("'aaaa', 'aa'", "'', 'a'", "'abc', ''", "'abababa', 'aba'", "'mississippi', 'ss'",
                "'xyz', 'xyzz'", "'aaa', 'a'", "'ABab', 'ab'"),
        details=("!$overlap", "!An empty `part` occurs 0 times.", "Matching is case-sensitive."),
        docs=("str-find", "while-loop"),
        variants=(
            dict(name="count_overlapping", how="counting overlapping matches", step="1",
                 overlap="Overlapping matches count: 'aa' occurs 3 times in 'aaaa'."),
            dict(name="count_non_overlapping", how="counting non-overlapping matches from the left",
                 step="len(part)", overlap="Matches do not overlap: 'aa' occurs 2 times in 'aaaa'."),
        ),
    ),
    Problem(
        family="strings",
        sig="def $name(a: str, b: str) -> bool",
        desc="Return True when `a` and `b` are anagrams of each other.",
        ref='''
def $name(a, b):
    clean_a = sorted(ch.lower() for ch in a if not ch.isspace())
    clean_b = sorted(ch.lower() for ch in b if not ch.isspace())
    return clean_a == clean_b
''',
        visible=("'listen', 'silent'", "'abc', 'abd'"),
        hidden=("'Dormitory', 'dirty room'", "'', ''", "'a', 'A'", "'aab', 'abb'", "'abc', 'abcd'",
                "'Astronomer', 'Moon starer'", "'x y', 'yx'", "'abc!', 'cba'"),
        details=("!Case is ignored.", "!Whitespace is ignored; all other characters count."),
        docs=("sorted-key", "str-case"),
        variants=(dict(name="is_anagram"),),
    ),
    Problem(
        family="strings",
        sig="def $name(text: str) -> bool",
        desc="Return True when `text` contains every letter of the English alphabet at least once.",
        ref='''
def $name(text):
    letters = set(ch for ch in text.lower() if "a" <= ch <= "z")
    return len(letters) == 26
''',
        visible=("'The quick brown fox jumps over the lazy dog'", "'hello'"),
        hidden=("''", "'abcdefghijklmnopqrstuvwxyz'", "'ABCDEFGHIJKLMNOPQRSTUVWXYZ'",
                "'abcdefghijklmnopqrstuvwxy'", "'Pack my box with five dozen liquor jugs.'",
                "'Sphinx of black quartz, judge my vow'", "'bcdefghijklmnopqrstuvwxyz'"),
        details=("!Upper-case letters count as their lower-case letter.", "Non-letters are ignored."),
        docs=("set-dedupe", "str-case"),
        variants=(dict(name="is_pangram"),),
    ),
)

# ---------------------------------------------------------------------------------------------------------
# lists
# ---------------------------------------------------------------------------------------------------------
_LISTS = (
    Problem(
        family="lists",
        sig="def $name(items: list, size: int) -> list[list]",
        desc="Split `items` into consecutive chunks of `size` items$what.",
        ref='''
def $name(items, size):
    if size <= 0:
        raise ValueError("size must be positive")
    chunks = []
    for start in range(0, len(items), size):
        chunk = items[start:start + size]
        if $keep:
            chunks.append(chunk)
    return chunks
''',
        visible=("[1, 2, 3, 4], 2", "['a', 'b', 'c'], 1"),
        hidden=("[1, 2, 3, 4, 5], 2", "[], 3", "[1, 2], 5", "[1, 2, 3], 3", "list(range(10)), 4", "[1, 2], 0",
                "[1], -1", "['x', 'y', 'z'], 2", "[0, 0, 0, 0], 3"),
        details=("!$last", "!A size of 0 or less raises ValueError.", "An empty list gives an empty list."),
        docs=("slicing", "range"),
        variants=(
            dict(name="chunk_list", what="", keep="chunk",
                 last="The last chunk may be shorter than `size`; it is kept."),
            dict(name="full_chunks", what=", keeping only complete chunks", keep="len(chunk) == size",
                 last="A last chunk shorter than `size` is dropped."),
        ),
    ),
    Problem(
        family="lists",
        sig="def $name(numbers: list[float]) -> list[float]",
        desc="Return the running $what of `numbers`: element i is the $what of numbers[0..i].",
        ref='''
def $name(numbers):
    result = []
    acc = None
    for x in numbers:
        acc = x if acc is None else $combine
        result.append(acc)
    return result
''',
        visible=("[1, 2, 3]", "[2, 2]"),
        hidden=("[]", "[3, 1, 4, 1, 5, 9, 2, 6]", "[-1, -5, 2]", "[0]", "[10, -10, 10]", "[1.5, 2.5]",
                "[-3, -2, -1]", "[7, 7, 7]", "[100, 1, 50, 2]"),
        details=("!An empty list gives an empty list.", "Numbers may be negative or floats.",
                 "The result has the same length as the input."),
        docs=("functools-reduce", "list-methods"),
        variants=(
            dict(name="running_sum", what="sum", combine="acc + x"),
            dict(name="running_max", what="maximum", combine="max(acc, x)"),
            dict(name="running_min", what="minimum", combine="min(acc, x)"),
            dict(name="running_product", what="product", combine="acc * x"),
        ),
    ),
    Problem(
        family="lists",
        sig="def $name(numbers: list[int]) -> int | None",
        desc="Return the $what distinct value of `numbers`.",
        ref='''
def $name(numbers):
    distinct = sorted(set(numbers), reverse=$rev)
    if len(distinct) < $k:
        return None
    return distinct[$k - 1]
''',
        visible=("[1, 2, 3, 4]", "[10, 30, 20]"),
        hidden=("[]", "[5]", "[5, 5, 5]", "[4, 4, 3]", "[-1, -2, -3]", "[1, 2]", "[3, 1, 3, 2, 2]", "[0, 0, 1]",
                "[7, 7, 8, 8, 9, 9]"),
        details=("!Duplicates count once: in [4, 4, 3] the largest distinct value is 4 and the next is 3.",
                 "!When there are fewer than $k distinct values, return None."),
        docs=("set-dedupe", "sorted-key"),
        variants=(
            dict(name="second_largest", what="second largest", rev="True", k="2"),
            dict(name="second_smallest", what="second smallest", rev="False", k="2"),
            dict(name="third_largest", what="third largest", rev="True", k="3"),
        ),
    ),
    Problem(
        family="lists",
        sig="def $name(items: list, k: int) -> list",
        desc="Return a new list with `items` rotated $dir by `k` positions.",
        ref='''
def $name(items, k):
    if not items:
        return []
    k %= len(items)
    return $expr
''',
        visible=("[1, 2, 3, 4, 5], 2", "['a', 'b', 'c'], 1"),
        hidden=("[], 3", "[1, 2, 3], 0", "[1, 2, 3], 3", "[1, 2, 3], 7", "[1], 5", "[1, 2, 3, 4], -1",
                "[1, 2], 1", "list(range(6)), 4"),
        details=("!`k` may be larger than the list length or negative; rotation is modulo the length.",
                 "!An empty list gives an empty list.", "The input list is not modified."),
        docs=("slicing", "divmod-modulo"),
        variants=(
            dict(name="rotate_left", dir="left", expr="items[k:] + items[:k]"),
            dict(name="rotate_right", dir="right", expr="items[len(items) - k:] + items[:len(items) - k]"),
        ),
    ),
    Problem(
        family="lists",
        sig="def $name(items: list[str]) -> list[str]",
        desc="Remove duplicates from `items`, $what.",
        ref='''
def $name(items):
    seen = set()
    out = []
    for item in $iter:
        key = $key
        if key not in seen:
            seen.add(key)
            out.append(item)
    return $ret
''',
        visible=("['a', 'b', 'a', 'c']", "['x']"),
        hidden=("[]", "['A', 'a', 'b', 'B']", "['b', 'a', 'b', 'a']", "['one', 'two', 'One', 'three', 'two']",
                "['z', 'z', 'z']", "['Ab', 'aB', 'ab']", "['q', 'r', 's']", "['', '', 'a']"),
        details=("!$rule", "The result keeps the relative order of the kept items."),
        docs=("set-dedupe", "list-methods"),
        variants=(
            dict(name="unique_in_order", what="keeping the first occurrence of each", iter="items", key="item",
                 ret="out", rule="Of equal items, the first one is kept."),
            dict(name="unique_keep_last", what="keeping the last occurrence of each", iter="reversed(items)",
                 key="item", ret="out[::-1]", rule="Of equal items, the last one is kept, at its position."),
            dict(name="unique_ignore_case", what="treating items that differ only in case as equal",
                 iter="items", key="item.lower()", ret="out",
                 rule="Items equal ignoring case are duplicates; the first spelling is kept."),
        ),
    ),
    Problem(
        family="lists",
        sig="def $name(a: list[int], b: list[int]) -> list[int]",
        desc="`a` and `b` are sorted ascending. Return $what, sorted ascending, in one linear pass.",
        ref='''
def $name(a, b):
    i = j = 0
    out = []
    while i < len(a) and j < len(b):
        if a[i] <= b[j]:
            out.append(a[i])
            i += 1
        else:
            out.append(b[j])
            j += 1
    out.extend(a[i:])
    out.extend(b[j:])
    return out
''',
        visible=("[1, 4, 7], [2, 3, 9]", "[], [1]"),
        hidden=("[], []", "[1, 1], [1]", "[5], [1, 2, 3]", "[1, 2, 3], [4, 5]", "[-3, 0], [-2, 8]",
                "[2, 2, 2], [2]", "[1, 3, 5, 7], [0, 8]", "[0], [0]"),
        details=("!Duplicates are kept: merging [1, 1] and [1] gives [1, 1, 1].",
                 "Either list may be empty."),
        docs=("while-loop", "list-methods"),
        variants=(dict(name="merge_sorted", what="all their elements"),),
    ),
    Problem(
        family="lists",
        sig="def $name(values: list[float]) -> list[float]",
        desc="Return the moving averages of `values` over windows of $k consecutive items, each rounded to 2 "
             "decimals.",
        ref='''
def $name(values):
    if len(values) < $k:
        return []
    out = []
    for i in range(len(values) - $k + 1):
        window = values[i:i + $k]
        out.append(round(sum(window) / $k, 2))
    return out
''',
        visible=("[1, 2, 3, 4, 5, 6]", "[10, 20, 30, 40]"),
        hidden=("[]", "[1]", "[1, 2]", "[1, 2, 3]", "[-1, 1, -1, 1]", "[0.5, 0.25, 1.0, 2.0]", "[5, 5, 5, 5, 5]",
                "[1, 2, 4, 8, 16, 32]", "[3, 1, 4, 1, 5]"),
        details=("!With fewer than $k values the result is empty.",
                 "Window i covers values[i] to values[i + $k - 1]."),
        docs=("sum-builtin", "round-builtin"),
        variants=(
            dict(name="moving_avg2", k="2"),
            dict(name="moving_avg3", k="3"),
            dict(name="moving_avg4", k="4"),
        ),
    ),
    Problem(
        family="lists",
        sig="def $name(numbers: list[int]) -> int",
        desc="Return the $what sum of any contiguous slice of `numbers`.",
        ref='''
def $name(numbers):
    best = 0
    current = 0
    for x in numbers:
        current = $fn(0, current + x)
        best = $fn(best, current)
    return best
''',
        visible=("[1, -2, 3, 4, -1]", "[2, 3]"),
        hidden=("[]", "[-1, -2, -3]", "[5]", "[-2, 1, -3, 4, -1, 2, 1, -5, 4]", "[0, 0]", "[3, -1, 3]",
                "[-5, 10, -5]", "[1, 2, -10, 4]"),
        details=("!The empty slice counts, so the result is never $never.",
                 "An empty list gives 0."),
        docs=("min-max-key", "while-loop"),
        variants=(
            dict(name="max_slice_sum", what="largest", fn="max", never="negative"),
            dict(name="min_slice_sum", what="smallest", fn="min", never="positive"),
        ),
    ),
    Problem(
        family="lists",
        sig="def $name(numbers: list[int]) -> tuple[list[int], list[int]]",
        desc="Split `numbers` into two lists, $what, keeping their order.",
        ref='''
def $name(numbers):
    yes, no = [], []
    for x in numbers:
        if $test:
            yes.append(x)
        else:
            no.append(x)
    return yes, no
''',
        visible=("[1, 2, 3, 4]", "[10, 15]"),
        hidden=("[]", "[0]", "[-1, -2, 0, 5]", "[7, 7, 8]", "[-3]", "[2, 4, 6]", "[100, -100, 1]"),
        details=("!$zero", "The result is a tuple of two lists."),
        docs=("list-methods", "divmod-modulo"),
        variants=(
            dict(name="split_even_odd", what="(evens, odds)", test="x % 2 == 0",
                 zero="0 is even; negative numbers follow the same rule."),
            dict(name="split_positive", what="(positives, the rest)", test="x > 0",
                 zero="0 is not positive."),
        ),
    ),
    Problem(
        family="lists",
        sig="def $name(items: list[int]) -> list[int]",
        desc="Return the values that occur more than once in `items`, $how.",
        ref='''
def $name(items):
    counts = {}
    for x in items:
        counts[x] = counts.get(x, 0) + 1
    return $ret
''',
        visible=("[1, 2, 2, 3, 3, 3]", "[4, 5]"),
        hidden=("[]", "[7, 7]", "[3, 1, 3, 1]", "[5, 4, 5, 4, 4]", "[-1, -1, 0]", "[9, 8, 7, 8, 9]", "[2]"),
        details=("!Each repeated value appears once in the result.", "!$order"),
        docs=("dict-get-setdefault", "sorted-key"),
        variants=(
            dict(name="duplicates_sorted", how="sorted ascending",
                 ret="sorted(x for x, n in counts.items() if n > 1)", order="The result is sorted ascending."),
            dict(name="duplicates_in_order", how="in order of first appearance",
                 ret="[x for x, n in counts.items() if n > 1]",
                 order="Values are listed in the order they first appear."),
        ),
    ),
    Problem(
        family="lists",
        sig="def $name(a: list, b: list) -> list",
        desc="Interleave `a` and `b` (a[0], b[0], a[1], b[1], ...)$rest.",
        ref='''
def $name(a, b):
    out = []
    for i in range(max(len(a), len(b))):
        if i < len(a):
            out.append(a[i])
        if i < len(b):
            out.append(b[i])
    return $ret
''',
        visible=("[1, 2], ['a', 'b']", "[0], [9]"),
        hidden=("[], []", "[1, 2, 3], ['x']", "[], [1, 2]", "[1], [2, 3, 4]", "['p', 'q'], ['r', 's']",
                "[None], [0]"),
        details=("!When one list is longer, $tail",),
        docs=("zip", "range"),
        variants=(
            dict(name="interleave", rest="; the rest of the longer list follows at the end", ret="out",
                 tail="its remaining items follow at the end."),
            dict(name="interleave_short", rest=", stopping when the shorter list runs out",
                 ret="out[:2 * min(len(a), len(b))]", tail="its extra items are dropped."),
        ),
    ),
)

# ---------------------------------------------------------------------------------------------------------
# dicts
# ---------------------------------------------------------------------------------------------------------
_WORDS_DETAILS = ("!Words are compared lower-cased.",
                  "!Punctuation (. , ! ? ; :) at either end of a word is stripped; a word that becomes empty is "
                  "ignored.",
                  "Words are separated by whitespace.")
_DICTS = (
    Problem(
        family="dicts",
        sig="def $name(text: str) -> dict[str, int]",
        desc="Count the words of `text`$which: return a dict mapping each word to its number of occurrences.",
        ref='''
def $name(text):
    counts = {}
    for word in text.lower().split():
        word = word.strip(".,!?;:")
        if len(word) >= $n:
            counts[word] = counts.get(word, 0) + 1
    return counts
''',
        visible=("'the cat and the hat'", "'one two two'"),
        hidden=("''", "'Hello, hello HELLO!'", "'a b a'", "'end. end? end!'", "'...'", "'The The the'",
                "'mixed Case mixed'", "'well-known words, well known'"),
        details=_WORDS_DETAILS,
        docs=("dict-get-setdefault", "str-strip"),
        variants=(
            dict(name="word_counts", which="", n="1"),
            dict(name="long_word_counts", which=" that have at least 4 letters", n="4"),
        ),
    ),
    Problem(
        family="dicts",
        sig="def $name(text: str) -> str | None",
        desc="Return the $what word of `text`.",
        ref='''
def $name(text):
    counts = {}
    for word in text.lower().split():
        word = word.strip(".,!?;:")
        if word:
            counts[word] = counts.get(word, 0) + 1
    if not counts:
        return None
    return min(counts, key=lambda w: ($sign counts[w], w))
''',
        visible=("'a b b c'", "'red red blue'"),
        hidden=("''", "'b a'", "'Dog dog cat'", "'x, y. x!'", "'z y x z y'", "'one'", "'... !!!'", "'B a b A c'"),
        details=_WORDS_DETAILS + ("!Ties go to the alphabetically first word; no words gives None.",),
        docs=("min-max-key", "dict-get-setdefault"),
        variants=(
            dict(name="most_common_word", what="most common", sign="-"),
            dict(name="least_common_word", what="least common", sign=""),
        ),
    ),
    Problem(
        family="dicts",
        sig="def $name(mapping: dict[str, int]) -> dict",
        desc="Invert `mapping`: $what.",
        ref='''
def $name(mapping):
    inverted = {}
    for key, value in mapping.items():
        inverted.setdefault(value, []).append(key)
    return {value: sorted(keys) for value, keys in inverted.items()}
''',
        visible=("{'a': 1, 'b': 2}", "{'x': 5}"),
        hidden=("{}", "{'a': 1, 'b': 1}", "{'z': 0, 'y': 0, 'x': 1}", "{'k': -1}", "{'b': 2, 'a': 2, 'c': 2}",
                "{'p': 1, 'q': 2, 'r': 1}"),
        details=("!$clash", "An empty dict gives an empty dict."),
        docs=("dict-items-iteration", "dict-get-setdefault"),
        variants=(
            dict(name="invert_grouped", what="map each value to the sorted list of keys that had it",
                 clash="Keys sharing a value are collected into one sorted list."),
            dict(name="invert_unique", what="map each value to a key that had it",
                 clash="When several keys share a value, the alphabetically smallest key wins.",
                 ref='''
def $name(mapping):
    inverted = {}
    for key in sorted(mapping):
        if mapping[key] not in inverted:
            inverted[mapping[key]] = key
    return inverted
'''),
        ),
    ),
    Problem(
        family="dicts",
        sig="def $name(words: list[str]) -> dict",
        desc="Group `words` by $what: return a dict from each key to the list of words with that key, in input "
             "order.",
        ref='''
def $name(words):
    groups = {}
    for word in words:
        key = $key
        groups.setdefault(key, []).append(word)
    return groups
''',
        visible=("['apple', 'bob', 'avocado']", "['hi', 'yo']"),
        hidden=("[]", "['', 'a']", "['Apple', 'apple', 'Banana']", "['aa', 'b', 'cc', 'ddd']", "['x', 'x']",
                "['Zed', 'zoo', 'ZZZ']", "['one', 'two', 'three', 'four']"),
        details=("!$rule", "Words keep their input order within a group."),
        docs=("dict-get-setdefault", "str-case"),
        variants=(
            dict(name="group_by_length", what="their length", key="len(word)", rule="The key is len(word)."),
            dict(name="group_by_initial", what="their first letter, lower-cased",
                 key='word[0].lower() if word else ""',
                 rule="The key is the lower-cased first letter; the empty word has key ''."),
            dict(name="group_by_last_letter", what="their last letter, lower-cased",
                 key='word[-1].lower() if word else ""',
                 rule="The key is the lower-cased last letter; the empty word has key ''."),
        ),
    ),
    Problem(
        family="dicts",
        sig="def $name(a: dict[str, int], b: dict[str, int]) -> dict[str, int]",
        desc="Merge `b` into a copy of `a`; $what.",
        ref='''
def $name(a, b):
    merged = dict(a)
    for key, value in b.items():
        if key in merged:
            merged[key] = $combine
        else:
            merged[key] = value
    return merged
''',
        visible=("{'x': 1}, {'y': 2}", "{}, {'k': 3}"),
        hidden=("{}, {}", "{'x': 1}, {'x': 2}", "{'a': 5, 'b': 1}, {'b': 7, 'c': 0}", "{'n': -3}, {'n': -4}",
                "{'p': 0}, {}", "{'a': 2, 'b': 2}, {'a': 2, 'b': -2}"),
        details=("!$clash", "Neither input is modified."),
        docs=("dict-items-iteration", "min-max-key"),
        variants=(
            dict(name="merge_add", what="values of keys in both are added", combine="merged[key] + value",
                 clash="For a key in both dicts the result holds the sum of the two values."),
            dict(name="merge_max", what="keys in both keep the larger value", combine="max(merged[key], value)",
                 clash="For a key in both dicts the result holds the larger value."),
            dict(name="merge_keep_first", what="keys already in `a` keep a's value", combine="merged[key]",
                 clash="For a key in both dicts, a's value wins."),
        ),
    ),
    Problem(
        family="dicts",
        sig="def $name(data: dict, path: str, default=None)",
        desc="Look up a value in nested dicts by a path of keys joined with '$sep' (e.g. 'a${sep}b').",
        ref='''
def $name(data, path, default=None):
    current = data
    for part in path.split("$sep"):
        if isinstance(current, dict) and part in current:
            current = current[part]
        else:
            return default
    return current
''',
        visible=("{'a': {'b': 1}}, 'a${sep}b'", "{'x': 2}, 'x'"),
        hidden=("{}, 'a'", "{'a': {'b': 1}}, 'a${sep}c'", "{'a': {'b': 1}}, 'a${sep}b${sep}c', 0",
                "{'a': 1}, 'a${sep}b'",
                "{'a': {'b': {'c': None}}}, 'a${sep}b${sep}c', 5", "{'': 3}, ''", "{'a': [1, 2]}, 'a${sep}0'",
                "{'k': {'j': False}}, 'k${sep}j', True"),
        details=("!A missing key, or a step into a value that is not a dict, returns `default`.",
                 "!A found value is returned even when it is None or False."),
        docs=("dict-get-setdefault", "isinstance"),
        variants=(
            dict(name="get_path", sep="."),
            dict(name="get_slash_path", sep="/"),
        ),
    ),
    Problem(
        family="dicts",
        sig="def $name(old: dict, new: dict) -> tuple[list, list, list]",
        desc="Compare two dicts: return (added keys, removed keys, changed keys), each list sorted.",
        ref='''
def $name(old, new):
    added = sorted(k for k in new if k not in old)
    removed = sorted(k for k in old if k not in new)
    changed = sorted(k for k in old if k in new and old[k] != new[k])
    return added, removed, changed
''',
        visible=("{'a': 1}, {'a': 1, 'b': 2}", "{'a': 1, 'c': 3}, {'a': 1}"),
        hidden=("{}, {}", "{'a': 1}, {'a': 2}", "{'b': 1, 'a': 1}, {'c': 1, 'd': 1}", "{'x': None}, {'x': 0}",
                "{'k': [1]}, {'k': [1]}", "{'z': 1, 'y': 2}, {'y': 3, 'z': 1, 'w': 0}"),
        details=("!A key in both dicts is changed when its values differ.",
                 "Keys with equal values in both are in none of the lists."),
        docs=("dict-items-iteration", "sorted-key"),
        variants=(dict(name="dict_diff"),),
    ),
    Problem(
        family="dicts",
        sig="def $name(scores: dict[str, int], threshold: int) -> list[str]",
        desc="Return the keys of `scores` whose value is $what `threshold`, sorted by value $order, ties by "
             "key.",
        ref='''
def $name(scores, threshold):
    keys = [k for k, v in scores.items() if v $cmp threshold]
    return sorted(keys, key=lambda k: ($sign scores[k], k))
''',
        visible=("{'a': 5, 'b': 1}, 3", "{'x': 10, 'y': 20}, 0"),
        hidden=("{}, 1", "{'a': 3}, 3", "{'b': 2, 'a': 2}, 2", "{'p': -1, 'q': -5}, -2", "{'m': 7, 'n': 9, 'o': 7}, 7",
                "{'z': 0}, 1"),
        details=("!$edge", "!Keys with equal values are ordered alphabetically."),
        docs=("sorted-key", "dict-items-iteration"),
        variants=(
            dict(name="keys_at_least", what="at least", cmp=">=", sign="-", order="descending",
                 edge="A value equal to the threshold is included."),
            dict(name="keys_below", what="below", cmp="<", sign="", order="ascending",
                 edge="A value equal to the threshold is excluded."),
        ),
    ),
)

# ---------------------------------------------------------------------------------------------------------
# math
# ---------------------------------------------------------------------------------------------------------
_MATH = (
    Problem(
        family="math",
        sig="def $name(a: int, b: int) -> int",
        desc="Return the $what of `a` and `b` using Euclid's algorithm.",
        ref='''
def $name(a, b):
    a, b = abs(a), abs(b)
    while b:
        a, b = b, a % b
    return a
''',
        visible=("12, 18", "7, 5"),
        hidden=("0, 0", "0, 9", "-12, 18", "100, 75", "17, 17", "1, 1000", "-4, -6", "270, 192"),
        details=("!Negative inputs are allowed; the result is never negative.", "$zero"),
        docs=("math-gcd", "while-loop"),
        variants=(
            dict(name="gcd", what="greatest common divisor", zero="gcd(0, 0) is 0 and gcd(0, n) is |n|."),
            dict(name="lcm", what="least common multiple", zero="If either number is 0 the result is 0.",
                 ref='''
def $name(a, b):
    if a == 0 or b == 0:
        return 0
    x, y = abs(a), abs(b)
    while y:
        x, y = y, x % y
    return abs(a * b) // x
'''),
        ),
    ),
    Problem(
        family="math",
        sig="def $name(n: int) -> bool",
        desc="Return True when `n` is a prime number.",
        ref='''
def $name(n):
    if n < 2:
        return False
    i = 2
    while i * i <= n:
        if n % i == 0:
            return False
        i += 1
    return True
''',
        visible=("7", "8"),
        hidden=("0", "1", "2", "-7", "9", "25", "97", "49", "7919", "3"),
        details=("!Numbers below 2 (including negatives) are not prime.", "Test divisors up to the square root."),
        docs=("primes-trial-division", "while-loop"),
        variants=(
            dict(name="is_prime"),
            dict(name="count_primes_below", sig="def $name(n: int) -> int",
                 desc="Return how many prime numbers are smaller than `n`.",
                 details=("!Primes strictly below n are counted: count_primes_below(7) is 3.",
                          "For n <= 2 the result is 0."),
                 ref='''
def $name(n):
    count = 0
    for k in range(2, n):
        i = 2
        while i * i <= k:
            if k % i == 0:
                break
            i += 1
        else:
            count += 1
    return count
'''),
            dict(name="nth_prime", sig="def $name(n: int) -> int", desc="Return the n-th prime number.",
                 visible=("1", "4"), hidden=("2", "3", "10", "25", "0", "-1", "6", "100"),
                 details=("!Counting starts at 1: nth_prime(1) is 2.", "!n < 1 raises ValueError."),
                 ref='''
def $name(n):
    if n < 1:
        raise ValueError("n must be at least 1")
    found = 0
    k = 1
    while found < n:
        k += 1
        i = 2
        while i * i <= k:
            if k % i == 0:
                break
            i += 1
        else:
            found += 1
    return k
'''),
        ),
    ),
    Problem(
        family="math",
        sig="def $name(n: int) -> int",
        desc="Return the sum of the decimal digits of `n`.",
        ref='''
def $name(n):
    n = abs(n)
    total = 0
    while n > 0:
        total += n % 10
        n //= 10
    return total
''',
        visible=("123", "45"),
        hidden=("0", "-123", "9", "1000", "99999", "-5", "10", "987654321"),
        details=("!A negative number has the digits of its absolute value.", "0 has digit sum 0."),
        docs=("divmod-modulo", "integer-division"),
        variants=(
            dict(name="digit_sum"),
            dict(name="digital_root", desc="Return the digital root of `n`: sum its digits repeatedly until "
                 "one digit remains.",
                 details=("!A negative number has the digital root of its absolute value.",
                          "The digital root of 0 is 0."),
                 ref='''
def $name(n):
    n = abs(n)
    while n >= 10:
        total = 0
        while n > 0:
            total += n % 10
            n //= 10
        n = total
    return n
'''),
            dict(name="count_digits", desc="Return how many decimal digits `n` has.",
                 details=("!0 has one digit.", "!The minus sign of a negative number is not a digit."),
                 ref='''
def $name(n):
    n = abs(n)
    count = 1
    while n >= 10:
        n //= 10
        count += 1
    return count
'''),
        ),
    ),
    Problem(
        family="math",
        sig="def $name(n: int) -> str",
        desc="Return '$x' if `n` is divisible by $a, '$y' if divisible by $b, '$x$y' if divisible by both, and "
             "otherwise `n` as a string.",
        ref='''
def $name(n):
    label = ""
    if n % $a == 0:
        label += "$x"
    if n % $b == 0:
        label += "$y"
    return label or str(n)
''',
        visible=("$a", "1"),
        hidden=("0", "$a * $b", "$b", "-$a", "7", "$a * $b * 2", "-1", "$b + 1", "$a * $a"),
        details=("!0 is divisible by every number.", "Negative numbers follow the same rule."),
        docs=("divmod-modulo", "str-format"),
        variants=(
            dict(name="fizzbuzz", a="3", b="5", x="Fizz", y="Buzz"),
            dict(name="foobar", a="2", b="7", x="Foo", y="Bar"),
            dict(name="pingpong", a="4", b="6", x="Ping", y="Pong"),
            dict(name="tictac", a="3", b="4", x="Tic", y="Tac"),
        ),
    ),
    Problem(
        family="math",
        sig="def $name(x: int, m: int) -> int",
        desc="Round the integer `x` to $what multiple of `m`.",
        ref='''
def $name(x, m):
    if m <= 0:
        raise ValueError("m must be positive")
    return $expr
''',
        visible=("12, 5", "20, 10"),
        hidden=("0, 3", "-7, 5", "15, 10", "14, 4", "-15, 10", "5, 0", "7, -2", "99, 100", "1, 1"),
        details=("!$ties", "!m must be positive, otherwise ValueError is raised.",
                 "x may be negative."),
        docs=("integer-division", "round-builtin"),
        variants=(
            dict(name="round_to_multiple", what="the nearest", expr="(x + m // 2) // m * m",
                 ties="A value exactly halfway rounds up (towards +infinity)."),
            dict(name="floor_to_multiple", what="the largest not above it", expr="x // m * m",
                 ties="Rounding goes towards -infinity, also for negative x."),
            dict(name="ceil_to_multiple", what="the smallest not below it", expr="-(-x // m) * m",
                 ties="Rounding goes towards +infinity, also for negative x."),
        ),
    ),
    Problem(
        family="math",
        sig="def $name(n: int) -> int",
        desc="Follow the Collatz sequence from `n` (halve even numbers, map odd n to 3n + 1) until it reaches "
             "1; return $what.",
        ref='''
def $name(n):
    if n < 1:
        raise ValueError("n must be positive")
    $init
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        $update
    return $ret
''',
        visible=("6", "3"),
        hidden=("1", "27", "0", "-4", "2", "7", "97", "16"),
        details=("!For n = 1 the sequence is already finished.", "!n < 1 raises ValueError."),
        docs=("while-loop", "integer-division"),
        variants=(
            dict(name="collatz_steps", what="the number of steps", init="steps = 0", update="steps += 1",
                 ret="steps"),
            dict(name="collatz_peak", what="the largest value reached (n included)", init="peak = n",
                 update="peak = max(peak, n)", ret="peak"),
        ),
    ),
    Problem(
        family="math",
        sig="def $name(n: int) -> str",
        desc="Return `n` written in base $b ($what).",
        ref='''
def $name(n):
    if n == 0:
        return "0"
    digits = "0123456789abcdef"
    sign = "-" if n < 0 else ""
    n = abs(n)
    out = ""
    while n:
        out = digits[n % $b] + out
        n //= $b
    return sign + out
''',
        visible=("5", "10"),
        hidden=("0", "-5", "1", "255", "1024", "-255", "7", "100", "$b"),
        details=("!0 is written '0'.", "!Negative numbers get a leading '-'.", "No prefix such as '0x' is added."),
        docs=("int-parse", "integer-division"),
        variants=(
            dict(name="to_binary", b="2", what="digits 0-1"),
            dict(name="to_ternary", b="3", what="digits 0-2"),
            dict(name="to_octal", b="8", what="digits 0-7"),
            dict(name="to_hex", b="16", what="digits 0-9 then lower-case a-f"),
        ),
    ),
    Problem(
        family="math",
        sig="def $name(values: list[float]) -> float | None",
        desc="Return the $what of `values`.",
        ref='''
def $name(values):
    if not values:
        return None
    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2 == 1:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2
''',
        visible=("[3, 1, 2]", "[5, 9, 7]"),
        hidden=("[]", "[4]", "[1, 2, 3, 4]", "[7, 7]", "[-5, 0, 5, 10]", "[2.5, 1.5]", "[1, 1, 2, 2, 2]",
                "[10, 1, 7, 3]"),
        details=("!An empty list gives None.", "!$rule"),
        docs=("sorted-key", "integer-division"),
        variants=(
            dict(name="median", what="median", rule="With an even count the median is the mean of the two "
                 "middle values."),
            dict(name="mode", what="most frequent value",
                 rule="On ties the smallest of the most frequent values is returned.",
                 ref='''
def $name(values):
    if not values:
        return None
    counts = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    best = max(counts.values())
    return min(v for v, n in counts.items() if n == best)
'''),
            dict(name="value_range", what="range (largest minus smallest value)",
                 rule="A single value has range 0.",
                 ref='''
def $name(values):
    if not values:
        return None
    return max(values) - min(values)
'''),
        ),
    ),
)

# ---------------------------------------------------------------------------------------------------------
# parsing
# ---------------------------------------------------------------------------------------------------------
_PARSING = (
    Problem(
        family="parsing",
        sig="def $name(text: str) -> dict",
        desc="Parse `text` of key=value pairs separated by '$sep' into a dict; values made of digits (with an "
             "optional leading '-') become ints, other values stay strings.",
        ref='''
def $name(text):
    result = {}
    for part in text.split("$sep"):
        part = part.strip()
        if not part:
            continue
        key, _, value = part.partition("=")
        value = value.strip()
        result[key.strip()] = int(value) if value.lstrip("-").isdigit() else value
    return result
''',
        visible=("'a=1${sep}b=x'", "'k=v'"),
        hidden=("''", "'x=-3${sep}y=4'", "' a = 1 ${sep} b = 2 '", "'a=1${sep}${sep}b=2'", "'flag'", "'a=1${sep}a=2'",
                "'url=x=y'", "'n=007'", "'neg=-'"),
        details=("!Spaces around keys and values are stripped; empty parts are skipped.",
                 "!A part without '=' maps the key to ''; only the first '=' splits.",
                 "A repeated key keeps its last value."),
        docs=("str-split-join", "str-strip"),
        variants=(
            dict(name="parse_pairs", sep=";"),
            dict(name="parse_comma_pairs", sep=","),
            dict(name="parse_query", sep="&"),
        ),
    ),
    Problem(
        family="parsing",
        sig="def $name(text: str) -> int",
        desc="Parse a duration such as '1h 30m 5s' and return it in whole $unit.",
        ref='''
import re

def $name(text):
    units = {"h": 3600, "m": 60, "s": 1}
    total = 0
    for amount, unit in re.findall("(\\\\d+)\\\\s*([hms])", text.lower()):
        total += int(amount) * units[unit]
    return total // $div
''',
        visible=("'1h 30m'", "'2h'"),
        hidden=("''", "'90s'", "'1H 1M 1S'", "'45m 30s'", "'10 m'", "'3h3h'", "'0h'", "'1h 59m 59s'", "'xyz'"),
        details=("!Unit letters are case-insensitive and may follow the number after spaces.",
                 "!$rounding", "Text that is not a number-unit pair is ignored."),
        docs=("re-findall", "integer-division"),
        variants=(
            dict(name="parse_seconds", unit="seconds", div="1", rounding="Units may repeat; all are added."),
            dict(name="parse_minutes", unit="minutes", div="60",
                 rounding="Leftover seconds are dropped (rounded down)."),
        ),
    ),
    Problem(
        family="parsing",
        sig="def $name(text: str) -> list[int]",
        desc="Expand a list of numbers and inclusive ranges such as '1-3,5' into $what.",
        ref='''
def $name(text):
    numbers = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-")
            numbers.extend(range(int(lo), int(hi) + 1))
        else:
            numbers.append(int(part))
    return $ret
''',
        visible=("'1-3,5'", "'7'"),
        hidden=("''", "'5-3'", "'1-1'", "'3, 1-2'", "'2,2,2'", "'10-12, 11'", "' 4 - 6 '", "'0-0,0'"),
        details=("!Ranges are inclusive; a range whose start is above its end is empty.",
                 "!$order", "Spaces around parts are ignored."),
        docs=("range", "str-split-join"),
        variants=(
            dict(name="expand_ranges", what="the list of numbers in the order given", ret="numbers",
                 order="Duplicates and order are kept as written."),
            dict(name="expand_ranges_unique", what="the sorted list of distinct numbers",
                 ret="sorted(set(numbers))", order="The result is sorted and has no duplicates."),
        ),
    ),
    Problem(
        family="parsing",
        sig="def $name(s: str) -> int",
        desc="Convert the Roman numeral `s` to an integer.",
        ref='''
def $name(s):
    values = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
    total = 0
    for i, ch in enumerate(s):
        value = values[ch]
        if i + 1 < len(s) and values[s[i + 1]] > value:
            total -= value
        else:
            total += value
    return total
''',
        visible=("'III'", "'LVIII'"),
        hidden=("'IV'", "'IX'", "'MCMXCIV'", "''", "'XL'", "'CDXLIV'", "'MMMCMXCIX'", "'I'"),
        details=("!A smaller numeral before a larger one is subtracted (IV is 4).", "The empty string is 0."),
        docs=("dict-get-setdefault", "enumerate"),
        variants=(
            dict(name="roman_to_int"),
            dict(name="int_to_roman", sig="def $name(n: int) -> str",
                 desc="Convert `n` (1 to 3999) to a Roman numeral.", visible=("3", "58"),
                 hidden=("4", "9", "1994", "40", "444", "3999", "0", "4000", "1"),
                 details=("!Subtractive forms are used: 4 is IV, 9 is IX, 40 is XL, 900 is CM.",
                          "!n outside 1..3999 raises ValueError."),
                 ref='''
def $name(n):
    if not 0 < n < 4000:
        raise ValueError("n must be in 1..3999")
    pairs = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"), (50, "L"),
             (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]
    out = ""
    for value, letters in pairs:
        while n >= value:
            out += letters
            n -= value
    return out
'''),
        ),
    ),
    Problem(
        family="parsing",
        sig="def $name(a: str, b: str) -> int",
        desc="Compare dotted version strings: return -1 if `a` is older than `b`, 1 if newer, 0 if equal.",
        ref='''
def $name(a, b):
    pa = [int(x) for x in a.split(".")]
    pb = [int(x) for x in b.split(".")]
    n = max(len(pa), len(pb))
    pa += [0] * (n - len(pa))
    pb += [0] * (n - len(pb))
    if pa < pb:
        return -1
    if pa > pb:
        return 1
    return 0
''',
        visible=("'1.2', '1.3'", "'2.0', '1.9'"),
        hidden=("'1.0', '1'", "'1.10', '1.9'", "'1.0.1', '1'", "'3', '3.0.0'", "'0.1', '0.01'", "'2.1', '2.10'",
                "'10.0', '9.9'", "'1.2.3', '1.2.4'"),
        details=("!Parts compare as numbers, not text: 1.10 is newer than 1.9.",
                 "!Missing parts count as 0: '1' equals '1.0.0'."),
        docs=("str-split-join", "int-parse"),
        variants=(dict(name="compare_versions"),),
    ),
    Problem(
        family="parsing",
        sig="def $name(text: str) -> bool",
        desc="Return True when `text` is a valid dotted-decimal IPv4 address.",
        ref='''
def $name(text):
    parts = text.split(".")
    if len(parts) != 4:
        return False
    for part in parts:
        if not part.isdigit() or int(part) > 255:
            return False
        if len(part) > 1 and part[0] == "0":
            return False
    return True
''',
        visible=("'192.168.1.1'", "'1.2.3'"),
        hidden=("'255.255.255.255'", "'256.1.1.1'", "'01.2.3.4'", "'0.0.0.0'", "''", "'1.2.3.4.5'", "'a.b.c.d'",
                "'1..2.3'", "'-1.2.3.4'", "'1.2.3.04'"),
        details=("!Each of the 4 parts is a number 0-255.", "!Leading zeros are not allowed ('01' is invalid).",
                 "Signs and empty parts are invalid."),
        docs=("str-isalpha", "str-split-join"),
        variants=(dict(name="is_ipv4"),),
    ),
    Problem(
        family="parsing",
        sig="def $name(color: str) -> tuple[int, int, int]",
        desc="Convert a hex colour such as '#ff8800' to an (r, g, b) tuple of ints.",
        ref='''
def $name(color):
    value = color.lstrip("#")
    if len(value) == 3:
        value = "".join(ch * 2 for ch in value)
    if len(value) != 6:
        raise ValueError("expected 3 or 6 hex digits")
    return tuple(int(value[i:i + 2], 16) for i in (0, 2, 4))
''',
        visible=("'#ff8800'", "'#000000'"),
        hidden=("'#fff'", "'abc'", "'#FFFFFF'", "'#12345'", "'123456'", "'#0a0B0c'", "''", "'#f0f'"),
        details=("!The 3-digit short form doubles each digit: '#fa0' is '#ffaa00'.",
                 "!The '#' is optional; any other length raises ValueError.", "Hex digits are case-insensitive."),
        docs=("int-parse", "slicing"),
        variants=(dict(name="hex_to_rgb"),),
    ),
    Problem(
        family="parsing",
        sig="def $name(name: str) -> str",
        desc="Convert a camelCase or PascalCase identifier to $what.",
        ref='''
def $name(name):
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i > 0 and not name[i - 1].isupper():
            out.append("$sep")
        out.append(ch.lower())
    return "".join(out)
''',
        visible=("'camelCase'", "'simple'"),
        hidden=("''", "'PascalCase'", "'getHTTPResponse'", "'a'", "'already${sep}lower'", "'X'", "'parseURLAndRun'",
                "'oneTwoThree'"),
        details=("!A leading capital gets no separator: 'PascalCase' starts with 'pascal'.",
                 "!A run of capitals (an acronym) gets one separator before it only."),
        docs=("str-case", "enumerate"),
        variants=(
            dict(name="to_snake_case", what="snake_case", sep="_"),
            dict(name="to_kebab_case", what="kebab-case", sep="-"),
        ),
    ),
    Problem(
        family="parsing",
        sig="def $name(text: str) -> bool",
        desc="Return True when the brackets $which in `text` are balanced and properly nested.",
        ref='''
def $name(text):
    pairs = $pairs
    stack = []
    for ch in text:
        if ch in pairs.values():
            stack.append(ch)
        elif ch in pairs:
            if not stack or stack.pop() != pairs[ch]:
                return False
    return not stack
''',
        visible=("'(a)(b)'", "'(()'"),
        hidden=("''", "')('", "'(]'", "'([{}])'", "'((())'", "'x'", "'{[}]'", "'())'", "'[(a + b) * c]'"),
        details=("!Every closing bracket must match the most recent unclosed opening one.",
                 "Other characters are ignored."),
        docs=("stack-queue", "dict-get-setdefault"),
        variants=(
            dict(name="parens_balanced", which="'(' and ')'", pairs='{")": "("}'),
            dict(name="brackets_balanced", which="'()', '[]' and '{}'", pairs='{")": "(", "]": "[", "}": "{"}'),
        ),
    ),
    Problem(
        family="parsing",
        sig="def $name(expression: str) -> float",
        desc="Evaluate an arithmetic expression in reverse Polish notation (tokens separated by spaces; "
             "operators + - * /).",
        ref='''
def $name(expression):
    stack = []
    for token in expression.split():
        if token in ("+", "-", "*", "/"):
            right = stack.pop()
            left = stack.pop()
            if token == "+":
                stack.append(left + right)
            elif token == "-":
                stack.append(left - right)
            elif token == "*":
                stack.append(left * right)
            else:
                stack.append(left / right)
        else:
            stack.append(float(token))
    if len(stack) != 1:
        raise ValueError("malformed expression")
    return stack[0]
''',
        visible=("'2 3 +'", "'4 5 *'"),
        hidden=("'10 4 -'", "'1 2 /'", "'3 4 + 2 *'", "'5'", "''", "'1 2'", "'-3 2 *'", "'8 2 / 2 /'"),
        details=("!The left operand comes first: '10 4 -' is 6.",
                 "!An expression that leaves other than one value raises ValueError.", "Numbers may be negative."),
        docs=("stack-queue", "float-parse"),
        variants=(dict(name="eval_rpn"),),
    ),
)

# ---------------------------------------------------------------------------------------------------------
# matrices
# ---------------------------------------------------------------------------------------------------------
_MATRIX_HIDDEN = ("[]", "[[1]]", "[[1, 2, 3]]", "[[1], [2], [3]]", "[[1, 2], [3, 4], [5, 6]]",
                  "[[0, -1], [-2, 5]]", "[[1, 2, 3], [4, 5, 6], [7, 8, 9]]")
_MATRICES = (
    Problem(
        family="matrices",
        sig="def $name(matrix: list[list[int]]) -> list[list[int]]",
        desc="Return $what of the rectangular `matrix` (a list of rows) as a new list of lists.",
        ref='''
def $name(matrix):
    if not matrix:
        return []
    return $expr
''',
        visible=("[[1, 2], [3, 4]]", "[[5, 6], [7, 8]]"),
        hidden=_MATRIX_HIDDEN,
        details=("!An empty matrix gives [].", "!The matrix need not be square.", "Rows are lists, not tuples."),
        docs=("matrix-lists", "zip"),
        variants=(
            dict(name="transpose", what="the transpose",
                 expr="[[row[i] for row in matrix] for i in range(len(matrix[0]))]"),
            dict(name="rotate_clockwise", what="the matrix rotated 90 degrees clockwise",
                 expr="[list(row) for row in zip(*matrix[::-1])]"),
            dict(name="rotate_counterclockwise", what="the matrix rotated 90 degrees counter-clockwise",
                 expr="[list(row) for row in zip(*matrix)][::-1]"),
        ),
    ),
    Problem(
        family="matrices",
        sig="def $name(matrix: list[list[int]]) -> int",
        desc="Return the sum of the $what diagonal of the square `matrix`.",
        ref='''
def $name(matrix):
    n = len(matrix)
    total = 0
    for i in range(n):
        total += matrix[i][$col]
    return total
''',
        visible=("[[1, 2], [3, 4]]", "[[5]]"),
        hidden=("[]", "[[1, 2, 3], [4, 5, 6], [7, 8, 9]]", "[[0, 0], [0, 0]]", "[[-1, 2], [3, -4]]",
                "[[1, 0, 0, 2], [0, 3, 4, 0], [0, 5, 6, 0], [7, 0, 0, 8]]"),
        details=("!$which", "An empty matrix sums to 0."),
        docs=("matrix-lists", "range"),
        variants=(
            dict(name="main_diagonal_sum", what="main", col="i",
                 which="The main diagonal runs from the top-left to the bottom-right corner."),
            dict(name="anti_diagonal_sum", what="anti-", col="n - 1 - i",
                 which="The anti-diagonal runs from the top-right to the bottom-left corner."),
        ),
    ),
    Problem(
        family="matrices",
        sig="def $name(matrix: list[list[int]]) -> list[int]",
        desc="Return the elements of the rectangular `matrix` in clockwise spiral order, starting at the "
             "top-left corner.",
        ref='''
def $name(matrix):
    out = []
    top, bottom = 0, len(matrix) - 1
    left, right = 0, len(matrix[0]) - 1 if matrix else -1
    while top <= bottom and left <= right:
        for j in range(left, right + 1):
            out.append(matrix[top][j])
        for i in range(top + 1, bottom + 1):
            out.append(matrix[i][right])
        if top < bottom:
            for j in range(right - 1, left - 1, -1):
                out.append(matrix[bottom][j])
        if left < right:
            for i in range(bottom - 1, top, -1):
                out.append(matrix[i][left])
        top, bottom, left, right = top + 1, bottom - 1, left + 1, right - 1
    return out
''',
        visible=("[[1, 2], [4, 3]]", "[[1, 2, 3], [8, 9, 4], [7, 6, 5]]"),
        hidden=_MATRIX_HIDDEN + ("[[1, 2, 3, 4], [5, 6, 7, 8]]",),
        details=("!Single rows and single columns are walked once, without repeats.", "!An empty matrix gives []."),
        docs=("matrix-lists", "while-loop"),
        variants=(dict(name="spiral_order"),),
    ),
    Problem(
        family="matrices",
        sig="def $name(a: list[list[int]], b: list[list[int]]) -> list[list[int]]",
        desc="Return the matrix product `a` x `b`.",
        ref='''
def $name(a, b):
    if not a or not b or len(a[0]) != len(b):
        raise ValueError("incompatible shapes")
    return [[sum(a[i][k] * b[k][j] for k in range(len(b))) for j in range(len(b[0]))] for i in range(len(a))]
''',
        visible=("[[1, 2], [3, 4]], [[5, 6], [7, 8]]", "[[2]], [[3]]"),
        hidden=("[[1, 2, 3]], [[1], [2], [3]]", "[[1], [2]], [[3, 4]]", "[[1, 2]], [[1, 2]]", "[], [[1]]",
                "[[1, 0], [0, 1]], [[4, -2], [7, 9]]", "[[0, 0]], [[1, 2], [3, 4]]"),
        details=("!The number of columns of a must equal the number of rows of b; otherwise ValueError.",
                 "!The result has as many rows as a and as many columns as b."),
        docs=("matrix-lists", "sum-builtin"),
        variants=(dict(name="matmul"),),
    ),
    Problem(
        family="matrices",
        sig="def $name(grid: list[list[int]]) -> int",
        desc="`grid` holds 1 for land and 0 for water. Return the number of islands: groups of land cells "
             "connected $how.",
        ref='''
def $name(grid):
    rows = len(grid)
    cols = len(grid[0]) if grid else 0
    seen = set()

    def flood(r, c):
        if r < 0 or r >= rows or c < 0 or c >= cols or (r, c) in seen or grid[r][c] != 1:
            return
        seen.add((r, c))
        for dr, dc in $moves:
            flood(r + dr, c + dc)
    count = 0
    for r in range(rows):
        for c in range(cols):
            if grid[r][c] == 1 and (r, c) not in seen:
                count += 1
                flood(r, c)
    return count
''',
        visible=("[[1, 1, 0], [0, 0, 0], [0, 1, 1]]", "[[0]]"),
        hidden=("[]", "[[1, 0], [0, 1]]", "[[1, 1], [1, 1]]", "[[1, 0, 1, 0, 1]]", "[[1], [0], [1]]",
                "[[0, 1, 0], [1, 1, 1], [0, 1, 0]]", "[[1, 0, 0], [0, 1, 0], [0, 0, 1]]"),
        details=("!$rule", "An empty grid has 0 islands."),
        docs=("recursion-basics", "matrix-lists"),
        variants=(
            dict(name="count_islands", how="horizontally or vertically",
                 moves="((1, 0), (-1, 0), (0, 1), (0, -1))",
                 rule="Diagonal neighbours are not connected."),
            dict(name="count_islands8", how="in any of the 8 directions",
                 moves="((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1), (-1, 1), (-1, -1))",
                 rule="Diagonal neighbours are connected."),
        ),
    ),
)

# ---------------------------------------------------------------------------------------------------------
# recursion
# ---------------------------------------------------------------------------------------------------------
_RECURSION = (
    Problem(
        family="recursion",
        sig="def $name(items: list) -> $ret_type",
        desc="`items` is a list whose elements may themselves be lists, nested to any depth. $what",
        ref='''
def $name(items):
    out = []
    for item in items:
        if isinstance(item, list):
            out.extend($name(item))
        else:
            out.append(item)
    return out
''',
        visible=("[1, [2, 3]]", "[4, 5]"),
        hidden=("[]", "[[[]]]", "[1, [2, [3, [4]]]]", "[[1, 2], [3], []]", "[(1, 2), [3]]", "['ab', ['c']]",
                "[[[[5]]], 6]"),
        details=("!Only lists are nested containers; tuples and strings are single values.",
                 "Empty lists contribute nothing."),
        docs=("recursion-basics", "isinstance"),
        variants=(
            dict(name="flatten", ret_type="list", what="Return a flat list of all non-list values, in order."),
            dict(name="nesting_depth", ret_type="int",
                 what="Return the nesting depth: 1 for a flat list, plus one for each level inside.",
                 details=("!Only lists count as levels; an empty list has depth 1.",
                          "[[]] has depth 2."),
                 ref='''
def $name(items):
    deepest = 0
    for item in items:
        if isinstance(item, list):
            deepest = max(deepest, $name(item))
    return deepest + 1
'''),
            dict(name="count_leaves", ret_type="int", what="Return how many non-list values it holds.",
                 ref='''
def $name(items):
    total = 0
    for item in items:
        if isinstance(item, list):
            total += $name(item)
        else:
            total += 1
    return total
'''),
        ),
    ),
    Problem(
        family="recursion",
        sig="def $name(n: int) -> int",
        desc="Count the ways to climb a staircase of `n` steps when each move climbs $what steps.",
        ref='''
def $name(n):
    memo = {}

    def ways(k):
        if k < 0:
            return 0
        if k == 0:
            return 1
        if k not in memo:
            memo[k] = sum(ways(k - s) for s in $steps)
        return memo[k]
    return ways(n)
''',
        visible=("3", "4"),
        hidden=("0", "1", "2", "10", "-1", "30", "7", "5"),
        details=("!There is exactly one way to climb 0 steps; a negative n has 0 ways.",
                 "Order matters: different sequences of moves are different ways."),
        docs=("memoization", "recursion-basics"),
        variants=(
            dict(name="climb_stairs", what="1 or 2", steps="(1, 2)"),
            dict(name="climb_stairs3", what="1, 2 or 3", steps="(1, 2, 3)"),
            dict(name="hop_odd", what="1, 3 or 5", steps="(1, 3, 5)"),
        ),
    ),
    Problem(
        family="recursion",
        sig="def $name(items: list[int], target: int) -> int",
        desc="`items` is sorted ascending. Using recursive binary search, return $what.",
        ref='''
def $name(items, target):

    def search(lo, hi):
        if lo > hi:
            return -1
        mid = (lo + hi) // 2
        if items[mid] == target:
            return mid
        if items[mid] < target:
            return search(mid + 1, hi)
        return search(lo, mid - 1)
    return search(0, len(items) - 1)
''',
        visible=("[1, 3, 5, 7], 5", "[2, 4, 6, 8, 10], 2"),
        hidden=("[], 1", "[1], 1", "[1], 2", "[1, 3, 5, 7], 7", "[1, 3, 5, 7], 0", "[1, 3, 5, 7], 8",
                "[1, 3, 5, 7], 4", "list(range(0, 100, 3)), 99"),
        details=("!When the target is missing, return -1.", "The values are distinct."),
        docs=("binary-search", "recursion-basics"),
        variants=(
            dict(name="binary_search", what="the index of `target`, or -1"),
            dict(name="insertion_point", what="the index where `target` would be inserted to keep the order "
                 "(before any equal values)",
                 details=("!The result may be len(items) when target is larger than every value.",
                          "!For a value already present, return its index."),
                 ref='''
def $name(items, target):

    def search(lo, hi):
        if lo >= hi:
            return lo
        mid = (lo + hi) // 2
        if items[mid] < target:
            return search(mid + 1, hi)
        return search(lo, mid)
    return search(0, len(items))
'''),
        ),
    ),
    Problem(
        family="recursion",
        sig="def $name(text: str) -> list[str]",
        desc="Return all distinct permutations of the characters of `text`, sorted.",
        ref='''
def $name(text):
    if len(text) <= 1:
        return [text]
    out = set()
    for i, ch in enumerate(text):
        for rest in $name(text[:i] + text[i + 1:]):
            out.add(ch + rest)
    return sorted(out)
''',
        visible=("'ab'", "'abc'"),
        hidden=("''", "'a'", "'aab'", "'aaa'", "'abcd'", "'xyx'", "'ba'"),
        details=("!Repeated characters give no duplicate permutations.", "!The empty string has one "
                 "permutation, ''."),
        docs=("itertools-permutations", "recursion-basics"),
        variants=(dict(name="unique_permutations"),),
    ),
    Problem(
        family="recursion",
        sig="def $name(items: list) -> list[list]",
        desc="Return all subsets of `items` (each a list keeping the input order): first the subsets without "
             "items[0], then those with it, recursively.",
        ref='''
def $name(items):
    if not items:
        return [[]]
    rest = $name(items[1:])
    return rest + [[items[0]] + subset for subset in rest]
''',
        visible=("[1, 2]", "['a']"),
        hidden=("[]", "[1, 2, 3]", "['x', 'y']", "[0, 0]", "[3, 2, 1]"),
        details=("!The empty list has one subset: [].", "Equal items are treated as different positions."),
        docs=("recursion-basics", "list-comprehension"),
        variants=(dict(name="subsets"),),
    ),
    Problem(
        family="recursion",
        sig="def $name(data) -> int",
        desc="`data` is an int, or a list or dict nested to any depth. Return $what.",
        ref='''
def $name(data):
    if isinstance(data, dict):
        return sum($name(v) for v in data.values())
    if isinstance(data, list):
        return sum($name(v) for v in data)
    if isinstance(data, int) and not isinstance(data, bool):
        return data
    return 0
''',
        visible=("[1, 2, [3]]", "{'a': 1, 'b': 2}"),
        hidden=("[]", "{}", "5", "{'a': [1, {'b': 2}], 'c': 3}", "[True, 2]", "['x', 4, None]", "[[[-1]], -2]",
                "{'k': {'j': {'i': 7}}}"),
        details=("!Dict keys are ignored; only values are summed.",
                 "!Values that are not ints (strings, None, booleans) count as 0."),
        docs=("isinstance", "recursion-basics"),
        variants=(dict(name="nested_sum", what="the sum of all ints it contains"),),
    ),
    Problem(
        family="recursion",
        sig="def $name(n: int, source: str = 'A', target: str = 'C', spare: str = 'B') -> list[tuple[str, str]]",
        desc="Return the moves (from_peg, to_peg) that solve the Towers of Hanoi for `n` disks, moving them "
             "from `source` to `target`.",
        ref='''
def $name(n, source="A", target="C", spare="B"):
    if n <= 0:
        return []
    return $name(n - 1, source, spare, target) + [(source, target)] + $name(n - 1, spare, target, source)
''',
        visible=("1", "2"),
        hidden=("0", "3", "2, 'X', 'Y', 'Z'", "-1", "4"),
        details=("!Use the classic recursion: n-1 disks to the spare peg, the largest to the target, then the "
                 "n-1 disks onto it.", "n <= 0 needs no moves."),
        docs=("recursion-basics", "list-methods"),
        variants=(dict(name="hanoi_moves"),),
    ),
    Problem(
        family="recursion",
        sig="def $name(rows: int, cols: int) -> int",
        desc="Count the paths from the top-left to the bottom-right cell of a `rows` x `cols` grid moving only "
             "right or down$extra.",
        ref='''
from functools import lru_cache

def $name(rows, cols):
    if rows <= 0 or cols <= 0:
        return 0

    @lru_cache(maxsize=None)
    def paths(r, c):
        if r == 1 or c == 1:
            return 1
        return paths(r - 1, c) + paths(r, c - 1)
    return paths(rows, cols)
''',
        visible=("2, 2", "3, 3"),
        hidden=("1, 1", "0, 5", "1, 7", "7, 1", "3, 7", "10, 10", "-1, 3"),
        details=("!A 1 x n grid has exactly one path.", "!A grid with 0 or fewer rows or columns has 0 paths."),
        docs=("memoization", "recursion-basics"),
        variants=(dict(name="grid_paths", extra=""),),
    ),
)

# ---------------------------------------------------------------------------------------------------------
# dates (ood)
# ---------------------------------------------------------------------------------------------------------
_LEAP = "year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)"
_DATES = (
    Problem(
        family="dates",
        sig="def $name(year: int, month: int, day: int) -> int",
        desc="Return $what for the given date of the Gregorian calendar (without using the datetime module).",
        ref='''
def $name(year, month, day):
    days = [31, 29 if %s else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    ordinal = sum(days[:month - 1]) + day
    return $ret
''' % _LEAP,
        visible=("2023, 1, 5", "2023, 2, 10"),
        hidden=("2024, 3, 1", "2023, 3, 1", "1900, 3, 1", "2000, 3, 1", "2023, 12, 31", "2024, 12, 31",
                "2023, 1, 1", "2100, 6, 15"),
        details=("!Leap years: divisible by 4, except centuries, which must be divisible by 400.",
                 "!February has 29 days in a leap year."),
        docs=("calendar-leap", "sum-builtin"),
        variants=(
            dict(name="day_of_year", what="the day of the year (1 January is 1)", ret="ordinal"),
            dict(name="days_left_in_year", what="how many days of the year remain after it",
                 ret="sum(days) - ordinal"),
        ),
    ),
    Problem(
        family="dates",
        sig="def $name(year: int) -> bool",
        desc="Return True when `year` is a leap year of the Gregorian calendar.",
        ref='''
def $name(year):
    return %s
''' % _LEAP,
        visible=("2024", "2023"),
        hidden=("1900", "2000", "2100", "2400", "1", "4", "1996", "2001"),
        details=("!Years divisible by 4 are leap years, except centuries not divisible by 400.",),
        docs=("calendar-leap", "divmod-modulo"),
        variants=(
            dict(name="is_leap_year"),
            dict(name="count_leap_years", sig="def $name(start: int, end: int) -> int",
                 desc="Return how many leap years lie between `start` and `end`, both included.",
                 visible=("2020, 2024", "2001, 2003"), hidden=("1900, 1900", "2000, 2000", "2024, 2020",
                                                               "1896, 1904", "1, 400", "2001, 2099", "1600, 2000"),
                 details=("!Both ends are included.", "!When start > end the count is 0.",
                          "Centuries are leap years only when divisible by 400."),
                 ref='''
def $name(start, end):
    count = 0
    for year in range(start, end + 1):
        if %s:
            count += 1
    return count
''' % _LEAP),
        ),
    ),
    Problem(
        family="dates",
        sig="def $name(a: str, b: str) -> int",
        desc="`a` and `b` are ISO dates ('YYYY-MM-DD'). Return the number of days between them.",
        ref='''
from datetime import date

def $name(a, b):
    return abs((date.fromisoformat(b) - date.fromisoformat(a)).days)
''',
        visible=("'2024-01-01', '2024-01-31'", "'2023-05-10', '2023-05-12'"),
        hidden=("'2024-03-01', '2024-02-01'", "'2024-01-01', '2024-01-01'", "'2023-02-28', '2023-03-01'",
                "'2024-02-28', '2024-03-01'", "'1999-12-31', '2000-01-01'", "'2000-01-01', '2001-01-01'"),
        details=("!The result is never negative: the order of the dates does not matter.",
                 "Leap days count like any other day."),
        docs=("datetime-date", "date-arithmetic"),
        variants=(
            dict(name="days_between"),
            dict(name="weekday_name", sig="def $name(iso: str) -> str",
                 desc="Return the English weekday name ('Monday' ... 'Sunday') of the ISO date `iso`.",
                 visible=("'2024-01-01'", "'2024-01-03'"),
                 hidden=("'2024-01-07'", "'2000-02-29'", "'1999-12-31'", "'2024-03-02'", "'2023-10-13'",
                         "'1970-01-01'"),
                 docs=("datetime-date",),
                 details=("!date.weekday() is 0 for Monday and 6 for Sunday.",
                          "Names are capitalized English names."),
                 ref='''
from datetime import date

def $name(iso):
    names = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
    return names[date.fromisoformat(iso).weekday()]
'''),
            dict(name="add_days", sig="def $name(iso: str, days: int) -> str",
                 desc="Return the ISO date `days` days after the ISO date `iso`.",
                 visible=("'2024-01-01', 1", "'2024-01-10', 5"),
                 hidden=("'2024-02-28', 1", "'2023-02-28', 1", "'2024-12-31', 1", "'2024-03-01', -1",
                         "'2024-01-01', 0", "'2024-01-01', 366"),
                 details=("!`days` may be negative.", "!Months and years roll over, leap days included."),
                 ref='''
from datetime import date, timedelta

def $name(iso, days):
    return (date.fromisoformat(iso) + timedelta(days=days)).isoformat()
'''),
        ),
    ),
    Problem(
        family="dates",
        sig="def $name(seconds: int) -> str",
        desc="Format a duration in seconds as $what.",
        ref='''
def $name(seconds):
    if seconds < 0:
        raise ValueError("negative duration")
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    parts = []
    if hours:
        parts.append(f"{hours}h")
    if minutes:
        parts.append(f"{minutes}m")
    if secs or not parts:
        parts.append(f"{secs}s")
    return " ".join(parts)
''',
        visible=("3725", "61"),
        hidden=("0", "59", "3600", "86399", "90000", "-1", "120", "3601"),
        details=("!Zero parts are left out, except that 0 is '0s'.", "!Negative durations raise ValueError.",
                 "Hours are not folded into days."),
        docs=("divmod-modulo", "str-format"),
        variants=(
            dict(name="format_duration", what="'1h 2m 5s'"),
            dict(name="format_clock", what="'HH:MM:SS'",
                 details=("!Hours, minutes and seconds always have two digits; hours may exceed 99.",
                          "!Negative durations raise ValueError."),
                 ref='''
def $name(seconds):
    if seconds < 0:
        raise ValueError("negative duration")
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}"
'''),
        ),
    ),
    Problem(
        family="dates",
        sig="def $name(year: int, month: int) -> int",
        desc="Return the number of days in `month` (1-12) of `year`.",
        ref='''
def $name(year, month):
    if not 1 <= month <= 12:
        raise ValueError("month must be 1..12")
    if month == 2:
        return 29 if %s else 28
    return 30 if month in (4, 6, 9, 11) else 31
''' % _LEAP,
        visible=("2023, 1", "2023, 4"),
        hidden=("2024, 2", "2023, 2", "1900, 2", "2000, 2", "2023, 12", "2023, 13", "2023, 0", "2023, 9"),
        details=("!February has 29 days in leap years.", "!A month outside 1..12 raises ValueError."),
        docs=("calendar-leap", "exceptions-valueerror"),
        variants=(
            dict(name="days_in_month"),
            dict(name="month_quarter", sig="def $name(month: int) -> str",
                 desc="Return the quarter ('Q1' to 'Q4') of `month` (1-12).", visible=("1", "5"),
                 hidden=("3", "4", "6", "7", "12", "0", "13", "10"),
                 details=("!Q1 is January to March; Q4 is October to December.",
                          "!A month outside 1..12 raises ValueError."),
                 ref='''
def $name(month):
    if not 1 <= month <= 12:
        raise ValueError("month must be 1..12")
    return f"Q{(month - 1) // 3 + 1}"
'''),
        ),
    ),
    Problem(
        family="dates",
        sig="def $name(text: str) -> int",
        desc="Parse a 12-hour clock time such as '2:30 PM' and return $what.",
        ref='''
def $name(text):
    clock, meridiem = text.strip().upper().split()
    hours, minutes = (int(x) for x in clock.split(":"))
    if not 1 <= hours <= 12 or not 0 <= minutes <= 59 or meridiem not in ("AM", "PM"):
        raise ValueError("bad time")
    hours %= 12
    if meridiem == "PM":
        hours += 12
    return $ret
''',
        visible=("'2:30 PM'", "'9:05 AM'"),
        hidden=("'12:00 AM'", "'12:00 PM'", "'12:59 am'", "'11:59 PM'", "'13:00 PM'", "'1:60 AM'", "' 7:15 pm '",
                "'1:00 XM'"),
        details=("!12 AM is midnight and 12 PM is noon.", "!AM/PM is case-insensitive; invalid times raise "
                 "ValueError."),
        docs=("time-parsing", "str-split-join"),
        variants=(
            dict(name="minutes_since_midnight", what="the minutes since midnight", ret="hours * 60 + minutes"),
            dict(name="to_24h", what="the time on a 24-hour clock as an int HHMM (e.g. 1430)",
                 ret="hours * 100 + minutes"),
        ),
    ),
)

# ---------------------------------------------------------------------------------------------------------
# classes (ood)
# ---------------------------------------------------------------------------------------------------------
_CLASSES = (
    Problem(
        family="classes",
        kind="class",
        sig="class $name:\n    def push(self, item) -> None\n    def pop(self)\n    def peek(self)\n"
            "    def __len__(self) -> int",
        desc="A $what: push adds an item; pop removes and returns the $end item; peek returns it without "
             "removing it.",
        ref='''
class $name:

    def __init__(self):
        self._items = []

    def push(self, item):
        self._items.append(item)

    def pop(self):
        if not self._items:
            return None
        return self._items.pop($index)

    def peek(self):
        if not self._items:
            return None
        return self._items[$index]

    def __len__(self):
        return len(self._items)
''',
        visible=("[(s := $name()).push(1), s.push(2), s.pop(), len(s)]",
                 "[(s := $name()).push('a'), s.peek(), len(s)]"),
        hidden=("[(s := $name()).pop(), len(s)]", "[(s := $name()).peek()]",
                "[(s := $name()).push(1), s.push(2), s.push(3), s.pop(), s.pop(), s.pop(), s.pop()]",
                "[(s := $name()).push(None), len(s), s.pop(), len(s)]",
                "[(s := $name()).push(5), s.peek(), s.peek(), len(s)]",
                "[(s := $name()).push(1), s.pop(), s.push(2), s.peek(), len(s)]",
                "len($name())"),
        details=("!pop and peek on an empty $what return None (no exception).",
                 "len() gives the number of items held."),
        docs=("classes-init", "stack-queue"),
        variants=(
            dict(name="Stack", what="stack", end="most recently pushed", index="-1"),
            dict(name="Queue", what="queue", end="earliest pushed", index="0"),
        ),
    ),
    Problem(
        family="classes",
        kind="class",
        sig="class $name:\n    def __init__(self, balance: int = 0)\n    def deposit(self, amount: int) -> int\n"
            "    def withdraw(self, amount: int) -> bool\n    balance: int",
        desc="A bank account. deposit adds money and returns the new balance; withdraw takes money out and "
             "returns True, or returns False and changes nothing when $limit_text.",
        ref='''
class $name:

    def __init__(self, balance=0):
        if balance < 0:
            raise ValueError("negative opening balance")
        self.balance = balance

    def deposit(self, amount):
        if amount <= 0:
            raise ValueError("deposit must be positive")
        self.balance += amount
        return self.balance

    def withdraw(self, amount):
        if amount <= 0:
            raise ValueError("withdrawal must be positive")
        if amount > self.balance + $limit:
            return False
        self.balance -= amount
        return True
''',
        visible=("[(a := $name(10)).deposit(5), a.withdraw(3), a.balance]", "[(a := $name()).deposit(1), a.balance]"),
        hidden=("[(a := $name(10)).withdraw(10), a.balance]", "[(a := $name(10)).withdraw(11), a.balance]",
                "[(a := $name()).withdraw($limit), a.balance]", "[(a := $name()).withdraw($limit + 1), a.balance]",
                "$name(-1)", "$name(5).deposit(0)", "$name(5).withdraw(-2)", "[(a := $name(3)).deposit(4), "
                "a.withdraw(7), a.balance]"),
        details=("!$limit_detail", "!Non-positive amounts and a negative opening balance raise ValueError."),
        docs=("classes-init", "exceptions-valueerror"),
        variants=(
            dict(name="BankAccount", limit="0", limit_text="the balance is too small",
                 limit_detail="Withdrawing exactly the whole balance is allowed; the balance never goes below 0."),
            dict(name="OverdraftAccount", limit="100", limit_text="it would take the balance below -100",
                 limit_detail="The balance may go down to exactly -100, not further."),
        ),
    ),
    Problem(
        family="classes",
        kind="class",
        sig="class $name:\n    def __init__(self, width: float, height: float)\n    def area(self) -> float\n"
            "    def perimeter(self) -> float\n    def is_square(self) -> bool\n    def scaled(self, factor: float)",
        desc="An axis-aligned rectangle. scaled returns a new $name with both sides multiplied by `factor`.",
        ref='''
class $name:

    def __init__(self, width, height):
        if width < 0 or height < 0:
            raise ValueError("sides must be non-negative")
        self.width = width
        self.height = height

    def area(self):
        return self.width * self.height

    def perimeter(self):
        return 2 * (self.width + self.height)

    def is_square(self):
        return self.width == self.height

    def scaled(self, factor):
        return type(self)(self.width * factor, self.height * factor)
''',
        visible=("[(r := $name(2, 3)).area(), r.perimeter()]", "$name(4, 4).is_square()"),
        hidden=("[(r := $name(0, 5)).area(), r.perimeter(), r.is_square()]", "$name(-1, 2)",
                "[(r := $name(2, 3).scaled(2)).width, r.height, r.area()]", "$name(3, 2).is_square()",
                "[(r := $name(1.5, 2)).area(), r.perimeter()]", "$name(0, 0).is_square()",
                "$name(2, -3)", "type($name(1, 1).scaled(3)).__name__"),
        details=("!A negative side raises ValueError; zero sides are allowed.",
                 "scaled does not change the original rectangle."),
        docs=("classes-init", "dunder-methods"),
        variants=(dict(name="Rectangle"),),
    ),
    Problem(
        family="classes",
        kind="class",
        sig="class $name:\n    def get(self, key) -> int\n    def put(self, key, value: int) -> None",
        desc="A least-recently-used cache holding at most $cap entries. get returns the value or -1; put "
             "inserts or updates a key, evicting the least recently used entry when full.",
        ref='''
class $name:

    def __init__(self):
        self._data = {}

    def get(self, key):
        if key not in self._data:
            return -1
        value = self._data.pop(key)
        self._data[key] = value
        return value

    def put(self, key, value):
        if key in self._data:
            self._data.pop(key)
        elif len(self._data) >= $cap:
            oldest = next(iter(self._data))
            del self._data[oldest]
        self._data[key] = value
''',
        visible=("[(c := $name()).put('a', 1), c.get('a')]", "[(c := $name()).get('x')]"),
        hidden=("[(c := $name()).put('a', 1), c.put('b', 2), c.put('c', 3), c.put('d', 4), c.get('a'), c.get('d')]",
                "[(c := $name()).put('a', 1), c.put('a', 5), c.get('a')]",
                "[(c := $name()).put(1, 1), c.put(2, 2), c.get(1), c.put(3, 3), c.put(4, 4), c.get(1), c.get(2)]",
                "[(c := $name()).put('k', 0), c.get('k')]",
                "[(c := $name()), [c.put(i, i * i) for i in range(6)], [c.get(i) for i in range(6)]][2]",
                "[(c := $name()).put('a', 1), c.put('b', 2), c.put('a', 3), c.put('c', 4), c.put('d', 5), "
                "c.get('a'), c.get('b')]"),
        details=("!Both get and put of an existing key make it the most recently used.",
                 "!Updating an existing key never evicts another one.", "Capacity is $cap."),
        docs=("dict-ordering", "classes-init"),
        variants=(
            dict(name="LRUCache2", cap="2"),
            dict(name="LRUCache3", cap="3"),
        ),
    ),
    Problem(
        family="classes",
        kind="class",
        sig="class $name:\n    def add(self, item, count: int = 1) -> None\n    def remove(self, item, count: int = 1)"
            " -> bool\n    def count(self, item) -> int\n    def total(self) -> int",
        desc="An inventory of item counts. remove takes items out and returns True, or returns False and changes "
             "nothing when there are not enough.",
        ref='''
class $name:

    def __init__(self):
        self._counts = {}

    def add(self, item, count=1):
        if count <= 0:
            raise ValueError("count must be positive")
        self._counts[item] = self._counts.get(item, 0) + count

    def remove(self, item, count=1):
        if count <= 0:
            raise ValueError("count must be positive")
        have = self._counts.get(item, 0)
        if have < count:
            return False
        if have == count:
            del self._counts[item]
        else:
            self._counts[item] = have - count
        return True

    def count(self, item):
        return self._counts.get(item, 0)

    def total(self):
        return sum(self._counts.values())
''',
        visible=("[(v := $name()).add('bolt', 3), v.count('bolt'), v.total()]",
                 "[(v := $name()).add('nut'), v.remove('nut'), v.count('nut')]"),
        hidden=("[(v := $name()).remove('x'), v.total()]",
                "[(v := $name()).add('a', 2), v.remove('a', 3), v.count('a')]",
                "[(v := $name()).add('a', 2), v.remove('a', 2), v.count('a'), v.total()]",
                "$name().add('a', 0)", "[(v := $name()).add('a', 5), v.add('b', 2), v.remove('a', 4), v.total()]",
                "[(v := $name()).count('ghost')]", "$name().remove('a', -1)"),
        details=("!Removing more than is held returns False and leaves the count unchanged.",
                 "!Non-positive counts raise ValueError."),
        docs=("dict-get-setdefault", "classes-init"),
        variants=(dict(name="Inventory"),),
    ),
    Problem(
        family="classes",
        kind="class",
        sig="class $name:\n    def __init__(self, x: float, y: float)\n    def __add__(self, other)\n"
            "    def __sub__(self, other)\n    def __eq__(self, other) -> bool\n    def dot(self, other) -> float\n"
            "    def scale(self, k: float)",
        desc="An immutable 2-D vector. +, - and scale return new vectors; == compares coordinates.",
        ref='''
class $name:

    def __init__(self, x, y):
        self.x = x
        self.y = y

    def __add__(self, other):
        return type(self)(self.x + other.x, self.y + other.y)

    def __sub__(self, other):
        return type(self)(self.x - other.x, self.y - other.y)

    def __eq__(self, other):
        return isinstance(other, $name) and self.x == other.x and self.y == other.y

    def dot(self, other):
        return self.x * other.x + self.y * other.y

    def scale(self, k):
        return type(self)(self.x * k, self.y * k)
''',
        visible=("[(v := $name(1, 2) + $name(3, 4)).x, v.y]", "$name(1, 2).dot($name(3, 4))"),
        hidden=("[(v := $name(5, 1) - $name(2, 3)).x, v.y]", "$name(1, 1) == $name(1, 1)",
                "$name(1, 1) == $name(1, 2)", "$name(0, 0) == (0, 0)", "[(v := $name(2, -3).scale(-2)).x, v.y]",
                "$name(1, 0).dot($name(0, 1))", "[(a := $name(1, 2)), a + $name(1, 1), a.x, a.y][2:]",
                "$name(2, 3) != $name(2, 3)"),
        details=("!A vector is never equal to a non-vector (such as a tuple).",
                 "Operations never modify their operands."),
        docs=("dunder-methods", "classes-init"),
        variants=(dict(name="Vector2"),),
    ),
)

PROBLEMS: tuple[Problem, ...] = (_STRINGS + _LISTS + _DICTS + _MATH + _PARSING + _MATRICES + _RECURSION + _DATES
                                 + _CLASSES)
