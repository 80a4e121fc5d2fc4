"""The documentation corpus RETRIEVE ranks for code tasks: short notes on the standard-library functions,
idioms and algorithms the tasks use, plus notes on unrelated library areas (distractors).

Each entry is ``(doc_id, title, text)``. Tasks name their relevant ``doc_id``s in the bank.
"""

from __future__ import annotations

DOCS: tuple[tuple[str, str, str], ...] = (
    # ----- strings ---------------------------------------------------------------------------------------
    ("str-case", "str.lower, str.upper, str.capitalize, str.casefold",
     "s.lower() and s.upper() return copies with all letters converted; compare text case-insensitively by "
     "lower-casing both sides (upper-case and lower-case letters counted alike). s.capitalize() upper-cases the "
     "first character and lower-cases the rest, so 'THE' becomes 'The'; s.title() capitalizes every word. "
     "casefold() is a stronger lower() for Unicode. Lower-case first to count vowels ignoring case, to compare "
     "anagrams or pangrams, or to group words by their lower-cased first letter."),
    ("str-membership", "Membership tests with in on strings",
     "ch in 'aeiou' tests whether a character belongs to a set of characters, such as vowels, consonants or hex "
     "digits. For counting characters, loop over the text and add one for each member; sum(1 for ch in text if "
     "ch in chars) is the one-line form. A set gives faster membership for large alphabets."),
    ("str-isalpha", "str.isalpha, str.isalnum, str.isdigit, str.isspace, str.isupper",
     "Character classification: isalpha() is True for letters, isdigit() for digits 0-9, isalnum() for letters "
     "or digits, isspace() for whitespace, isupper()/islower() for case. Use them to filter text, for example "
     "keep only letters and digits when checking a palindrome, or validate that every part of an address is a "
     "number. They return False for the empty string."),
    ("str-split-join", "str.split and str.join",
     "text.split() with no argument splits on runs of whitespace and drops leading and trailing whitespace, so "
     "words are never empty; text.split(',') splits on every comma and keeps empty parts. sep.join(words) "
     "glues a list of strings back together with single separators. s.partition('=') splits once into "
     "(before, sep, after), handy for key=value pairs. Parse comma separated lists with split(',') and strip(); "
     "split version strings and IPv4 addresses on '.', clock times on ':'; join encoded parts with ''.join."),
    ("str-strip", "str.strip, str.lstrip, str.rstrip",
     "strip() removes whitespace from both ends; strip('.,!?') removes any of the given characters from both "
     "ends, such as punctuation around a word when counting words, or spaces around keys and values. lstrip "
     "and rstrip work on one end only: '#ff8800'.lstrip('#') drops a leading hash, '-12'.lstrip('-') drops a "
     "sign. They never touch the middle of the string."),
    ("str-find", "str.find, str.count and searching substrings",
     "text.find(part, start) returns the lowest index of part at or after start, or -1 when absent. Loop with "
     "find to count occurrences: advance by 1 to count overlapping matches or by len(part) for non-overlapping "
     "ones. text.count(part) counts non-overlapping occurrences. Guard against an empty part, which is found "
     "at every position."),
    ("str-format", "f-strings and format specifications",
     "f'{value}' formats values inside strings; f'{n:02d}' pads an integer with zeros to two digits (clock "
     "times HH:MM:SS), f'{x:.2f}' rounds a float for display, f'{n:x}' writes hexadecimal. str(count) turns a "
     "number into text for building run-length encoded strings, labels like 'Fizz' or durations like '1h 2m "
     "5s'. '#' * n repeats a character n times, e.g. to mask text."),
    ("ord-chr", "ord and chr: characters and code points",
     "ord('a') is 97 and chr(97) is 'a'. Shift a letter in the alphabet with chr((ord(ch) - ord('a') + k) % 26 "
     "+ ord('a')); the % 26 wraps around past 'z' back to 'a' (Caesar cipher, rot13). Use ord('A') as the base "
     "for upper-case letters to keep the case. str.isascii() tells ASCII letters from accented ones."),
    ("slicing", "Sequence slicing",
     "s[i:j] takes items i to j-1; s[-n:] takes the last n items; s[::-1] reverses a string or list (palindrome "
     "checks, reversed words). Slices never raise for out-of-range bounds: they clamp. items[k:] + items[:k] "
     "rotates a list left by k; text[-4:] keeps the last 4 characters when masking a card number; value[i:i + 2] "
     "takes pairs of hex digits. A slice of a list is a new list; the original is not modified. A palindrome "
     "reads the same forwards and backwards: s == s[::-1]."),
    # ----- lists and iteration ---------------------------------------------------------------------------
    ("list-methods", "list.append, list.extend, list.pop, list.insert",
     "append adds one item at the end, extend adds all items of an iterable, pop() removes and returns the last "
     "item and pop(0) the first (a queue), insert(i, x) puts x before index i. Building a result list with "
     "append inside a loop is the usual way to compute running sums, running maxima or filtered lists, to split "
     "numbers into two lists (evens and odds), to remove duplicates keeping the first occurrence, or to collect "
     "moves."),
    ("range", "range(start, stop, step)",
     "range(n) yields 0..n-1; range(a, b) yields a..b-1, so an inclusive range from lo to hi is range(lo, hi + "
     "1); range(0, len(items), size) steps through chunk start indices; range(n - 1, -1, -1) counts down. An "
     "empty range (start >= stop with a positive step) yields nothing. Use range to index diagonals, interleave "
     "two lists by position, or expand '1-3' into 1, 2, 3."),
    ("enumerate", "enumerate(iterable, start=0)",
     "for i, item in enumerate(items) gives each index with its item, useful when a decision depends on the "
     "position (the first word of a headline, the next Roman numeral character, a capital letter following a "
     "lower-case one when converting camelCase to snake_case)."),
    ("zip", "zip and zip(*rows)",
     "zip(a, b) pairs items of several iterables and stops at the shortest one; itertools.zip_longest fills "
     "the missing values instead. zip(*matrix) transposes a list of rows into columns (as tuples), so "
     "[list(col) for col in zip(*matrix[::-1])] rotates a matrix clockwise. Interleave two lists by zipping."),
    ("sorted-key", "sorted with key and reverse",
     "sorted(iterable) returns a new ascending list; reverse=True gives descending order. key=lambda k: "
     "(-count[k], k) sorts by count descending and breaks ties alphabetically. sorted(set(numbers)) gives "
     "the distinct values in order (second largest distinct value, median). Two strings are anagrams when their "
     "sorted letters are equal. Sorting is stable; sort keys of a dict before returning them."),
    ("min-max-key", "min, max and key functions",
     "max(iterable) and min(iterable) return the largest or smallest item; with key= they compare by a derived "
     "value, and they return the first of several equal items. max(a, b) of two values builds running maxima "
     "and Kadane's maximum subarray sum: current = max(0, current + x). The longest word: max(words, key=len)."),
    ("sum-builtin", "sum(iterable, start=0)",
     "sum adds numbers; sum of an empty iterable is 0. Combine it with a generator: sum(a[i][k] * b[k][j] for k "
     "in range(n)) for an entry of the matrix product a x b, sum(days[:month - 1]) for the day of the year, "
     "sum(window) / k for a moving average of a window of values."),
    ("round-builtin", "round(number, ndigits) and banker's rounding",
     "round(x, 2) rounds to two decimals; round uses round-half-to-even, so round(2.5) is 2. To round an integer "
     "to the nearest multiple of m with ties going up, use (x + m // 2) // m * m; floor to a multiple with "
     "x // m * m and ceil with -(-x // m) * m. Averages of windows are often rounded for display."),
    ("set-dedupe", "Sets for distinct values and duplicates",
     "set(items) keeps each distinct value once; it has no order, so sort it or track a seen set while "
     "looping to remove duplicates in order (keep the first occurrence). len(set(letters)) == 26 tests that "
     "all letters of the alphabet occur (pangram). The second largest distinct value is sorted(set(numbers))[-2]; "
     "duplicates count once."),
    ("list-comprehension", "List comprehensions",
     "[f(x) for x in items if cond(x)] builds a list in one expression; nested comprehensions build matrices: "
     "[[row[i] for row in matrix] for i in range(cols)]. [[first] + s for s in rest] extends every subset of a "
     "power set: all subsets of items are the subsets without the first item plus those with it."),
    ("while-loop", "while loops and two-pointer scans",
     "while cond: repeats until cond is false: Euclid's gcd (while b: a, b = b, a % b), digit loops (while n: "
     "n //= 10), the Collatz sequence, merging two sorted lists with two indices i and j that advance "
     "independently, Kadane's scan for the largest slice sum, trial division for primes, repeated find() to "
     "count occurrences, a spiral walk. Make sure every iteration moves towards the end condition."),
    # ----- dicts -----------------------------------------------------------------------------------------
    ("dict-get-setdefault", "dict.get and dict.setdefault",
     "d.get(key, default) returns default for a missing key instead of raising KeyError; counts[w] = "
     "counts.get(w, 0) + 1 counts word occurrences (word frequency). d.setdefault(key, []).append(x) groups "
     "items by a key, such as grouping words by length or first letter, or inverting a mapping. A dict maps "
     "symbols to values (Roman numerals, closing to opening brackets) and counts values that occur more than "
     "once, the most common word, or the items of an inventory."),
    ("dict-items-iteration", "Iterating over dicts: keys, values, items",
     "for key, value in d.items() visits pairs in insertion order; dict(a) copies a dict before merging "
     "another into it; {v: k for k, v in d.items()} inverts a mapping (later keys win). Compare two dicts by "
     "their key sets: keys added, removed, or changed values."),
    ("dict-ordering", "Dicts keep insertion order (LRU caches)",
     "Since Python 3.7 dicts remember insertion order; next(iter(d)) is the oldest key. Popping a key and "
     "inserting it again moves it to the end, which makes a least-recently-used (LRU) cache: on get or put, "
     "move the key to the end; when full, evict next(iter(d)). collections.OrderedDict has move_to_end."),
    ("collections-counter", "collections.Counter",
     "Counter(iterable) counts hashable items; most_common(n) lists the n most frequent (ties in first-seen "
     "order); counters support + and -. Counter(words)['x'] is 0 for a missing word."),
    # ----- numbers ---------------------------------------------------------------------------------------
    ("divmod-modulo", "The % operator, divmod and divisibility",
     "a % b is the remainder; n % 3 == 0 tests divisibility (FizzBuzz), n % 2 == 0 tests even numbers. With a "
     "positive b the result is never negative, so % wraps indices around (rotating a list by k % len, the "
     "alphabet in a Caesar shift or rot13). n % 10 is the last decimal digit (digit sums); year % 4 == 0 "
     "tests leap years. divmod(seconds, 60) returns (minutes, seconds) in one call for formatting durations."),
    ("integer-division", "Floor division //",
     "a // b divides and rounds towards minus infinity: 7 // 2 is 3 and -7 // 2 is -4. Strip the last decimal "
     "digit with n //= 10 (digit sums, counting digits, base conversion with n % base and n //= base). Halve "
     "even numbers with n // 2 (Collatz) and find the middle index with (lo + hi) // 2 (median, binary search). "
     "x // m * m rounds down to a multiple of m; seconds // 60 gives whole minutes."),
    ("math-gcd", "math.gcd, math.lcm and Euclid's algorithm",
     "math.gcd(a, b) returns the greatest common divisor (never negative; gcd(0, 0) is 0); math.lcm the least "
     "common multiple. Euclid's algorithm: while b: a, b = b, a % b. lcm(a, b) = |a * b| // gcd(a, b), and 0 "
     "when either is 0."),
    ("primes-trial-division", "Prime numbers by trial division",
     "n is prime when n >= 2 and no i with i * i <= n divides it; numbers below 2 are not prime. Counting primes "
     "below n or finding the n-th prime repeats the test; a sieve of Eratosthenes is faster for many numbers."),
    ("int-parse", "int(text, base), bin, hex and digit strings",
     "int('ff', 16) parses hexadecimal, int('101', 2) binary; bin(5) is '0b101' and hex(255) is '0xff' with "
     "prefixes. To write a number in base b yourself, take digits '0123456789abcdef'[n % b] and divide n //= "
     "b until 0, handling 0 and negative numbers separately. int('007') is 7."),
    ("float-parse", "float(text) and arithmetic on floats",
     "float('2.5') and float('-3') parse numbers, raising ValueError on other text. Division / always gives a "
     "float; compare floats with math.isclose. A stack-based calculator pushes numbers and pops two operands "
     "for each operator."),
    # ----- parsing and errors ----------------------------------------------------------------------------
    ("re-findall", "re.findall and regular expressions",
     "re.findall(r'(\\d+)\\s*([hms])', text) returns a list of tuples of the groups for every match, e.g. the "
     "number and unit of each part of a duration like '1h 30m'. \\d+ matches digits, \\s* optional whitespace, "
     "[hms] one of the letters. Lower-case the text first for case-insensitive units, or pass re.IGNORECASE."),
    ("exceptions-valueerror", "Raising ValueError for invalid input",
     "raise ValueError('message') signals an argument with the right type but an invalid value: a month outside "
     "1..12, a negative amount, a malformed time or colour. Validate inputs at the start of a function or "
     "constructor, before changing any state: a bank account refuses a negative deposit, days_in_month a month "
     "13."),
    ("stack-queue", "Stacks and queues with lists and collections.deque",
     "A list is a stack: append pushes, pop() removes the most recent item, items[-1] peeks. A queue removes "
     "the oldest item: list.pop(0) or, faster, collections.deque.popleft(). Stacks check balanced brackets (push "
     "openers, pop on a closer and compare) and evaluate reverse Polish notation."),
    ("isinstance", "isinstance and type checks",
     "isinstance(x, list) tests the type, including subclasses; isinstance(x, (int, float)) accepts several. "
     "bool is a subclass of int, so isinstance(True, int) is True: test bool first when booleans must not count "
     "as numbers. Recursive functions over nested lists and dicts branch on isinstance; a lookup by a path of "
     "keys into nested dicts checks isinstance(current, dict) at each step."),
    # ----- algorithms ------------------------------------------------------------------------------------
    ("recursion-basics", "Recursion: base cases and recursive cases",
     "A recursive function solves a problem by calling itself on smaller inputs and needs a base case that stops "
     "the recursion: an empty list, n == 0, a single character. Flatten nested lists, measure nesting depth, "
     "sum nested structures, generate subsets and permutations, solve the Towers of Hanoi, flood-fill a grid to "
     "count islands, search a sorted list recursively, count the ways to climb stairs or paths through a grid."),
    ("memoization", "Memoization with functools.lru_cache or a dict",
     "@functools.lru_cache(maxsize=None) caches a function's results by its arguments, turning exponential "
     "recursions such as climbing stairs (ways(n) = ways(n - 1) + ways(n - 2)) or counting grid paths into "
     "linear ones. A dict memo inside the function does the same. Define base cases for 0 and negatives."),
    ("binary-search", "Binary search and the bisect module",
     "Binary search halves a sorted range each step: mid = (lo + hi) // 2, then continue left or right. "
     "bisect.bisect_left(a, x) returns the insertion point before equal values, bisect_right after them. "
     "Return -1 when a value is not found; watch the lo <= hi boundary."),
    ("itertools-permutations", "itertools.permutations and combinations",
     "itertools.permutations('abc') yields every ordering as tuples; with repeated characters it yields "
     "duplicates, so collect them in a set. combinations(items, k) yields subsets of size k; product gives "
     "Cartesian products."),
    ("matrix-lists", "Matrices as lists of lists",
     "A matrix is a list of rows: matrix[r][c]; len(matrix) rows and len(matrix[0]) columns (guard the empty "
     "matrix). The main diagonal is matrix[i][i], the anti-diagonal matrix[i][n - 1 - i]. Transpose with zip(*"
     "matrix), rotate with zip over reversed rows, walk a spiral with four shrinking bounds, multiply with three "
     "nested loops for a matrix product. Grids of 0 and 1 represent land and water for island counting."),
    # ----- dates -----------------------------------------------------------------------------------------
    ("datetime-date", "datetime.date and ISO dates",
     "date.fromisoformat('2024-03-01') parses an ISO date 'YYYY-MM-DD'; d.isoformat() writes it back. "
     "d.weekday() is 0 for Monday to 6 for Sunday; d.isoweekday() is 1 to 7. Dates compare with < and ==."),
    ("date-arithmetic", "Date arithmetic with timedelta",
     "Subtracting two dates gives a timedelta; (b - a).days is the signed number of days between them, so take "
     "abs() for a distance. date + timedelta(days=n) moves forward or backward n days across months, years "
     "and leap days."),
    ("calendar-leap", "Leap years and days per month",
     "A Gregorian leap year is divisible by 4, except century years, which must be divisible by 400: 2000 and "
     "2024 are leap years, 1900 and 2100 are not. calendar.isleap(year) tests it and calendar.monthrange(year, "
     "month)[1] gives the days in a month; February has 29 days in a leap year. The day of the year adds the "
     "lengths of the earlier months."),
    ("time-parsing", "Parsing clock times",
     "time.strptime('2:30 PM', '%I:%M %p') parses 12-hour clock times; 12 AM is midnight (hour 0) and 12 PM is "
     "noon. Without strptime, split on ':' and the space, map hours with hours % 12 and add 12 for PM."),
    # ----- classes ---------------------------------------------------------------------------------------
    ("classes-init", "Classes, __init__ and instance attributes",
     "class Account: def __init__(self, balance=0): self.balance = balance. Methods take self and change or "
     "read the instance's attributes; validate arguments in __init__ and raise ValueError for invalid state. "
     "Return values from methods that callers need, such as a new balance or a success flag."),
    ("dunder-methods", "Special methods: __eq__, __add__, __len__, __repr__",
     "Define __eq__ to compare instances by value (return False or NotImplemented for other types), __add__ "
     "and __sub__ for + and -, __len__ for len(), __repr__ for display. type(self)(...) builds a new instance "
     "of the same class, so operators can return new objects instead of modifying their operands."),
    ("dataclasses", "dataclasses.dataclass",
     "@dataclass generates __init__, __repr__ and __eq__ from annotated fields; frozen=True makes instances "
     "immutable and hashable; field(default_factory=list) gives each instance its own list."),
    # ----- related but unused by the tasks ---------------------------------------------------------------
    ("functools-reduce", "functools.reduce",
     "reduce(f, items, initial) folds a sequence into one value, e.g. reduce(operator.mul, nums, 1) for a "
     "product. itertools.accumulate(numbers) yields the running results instead: running sums; with "
     "operator.mul a running product, with max a running maximum, with min a running minimum."),
    ("itertools-groupby", "itertools.groupby",
     "groupby(items, key) groups consecutive items with equal keys; sort first to group all equal keys. Each "
     "group is an iterator that is consumed when the next group starts."),
    ("str-replace-translate", "str.replace, str.translate and str.maketrans",
     "s.replace(old, new, count) substitutes substrings; str.maketrans builds a character mapping and "
     "s.translate(table) applies it in one pass, also deleting characters."),
    ("textwrap", "textwrap: wrapping and indenting text",
     "textwrap.wrap(text, width) breaks text into lines of at most width characters; fill joins them; dedent "
     "removes common leading whitespace from a block."),
    ("math-module", "math: sqrt, isqrt, floor, ceil, pi",
     "math.isqrt(n) is the exact integer square root; math.floor and math.ceil round floats to integers; "
     "math.inf compares greater than any number; math.prod multiplies."),
    ("decimal-fractions", "decimal.Decimal and fractions.Fraction",
     "Decimal('0.1') represents decimal numbers exactly, with configurable rounding modes such as "
     "ROUND_HALF_UP; Fraction(1, 3) keeps exact rationals."),
    ("heapq", "heapq: priority queues",
     "heapq.heappush and heappop keep a list as a binary min-heap; nlargest(k, items) and nsmallest(k, items) "
     "select the top k items."),
    ("generators", "Generators and yield",
     "A function with yield returns a lazy iterator; yield from delegates to another iterable. Generators are "
     "consumed once."),
    # ----- distractors -----------------------------------------------------------------------------------
    ("asyncio", "asyncio: coroutines and event loops",
     "async def defines a coroutine; await suspends it until an awaitable completes; asyncio.run starts the "
     "event loop; asyncio.gather runs coroutines concurrently; asyncio.Queue passes messages between tasks."),
    ("threading", "threading: threads and locks",
     "threading.Thread(target=f).start() runs f concurrently; Lock protects shared state; the GIL lets only one "
     "thread run Python bytecode at a time, so threads help with I/O rather than computation."),
    ("subprocess", "subprocess.run",
     "subprocess.run(['ls', '-l'], capture_output=True, text=True, check=True) runs a program and returns its "
     "exit code and output; never pass untrusted input with shell=True."),
    ("socket", "socket: TCP clients and servers",
     "socket.create_connection((host, port)) opens a TCP connection; sendall and recv move bytes; a server "
     "binds, listens and accepts connections."),
    ("json-module", "json: dumps and loads",
     "json.dumps(obj, indent=2, sort_keys=True) serialises dicts, lists, strings, numbers, booleans and None; "
     "json.loads parses JSON text; tuples become lists."),
    ("pickle", "pickle: object serialisation",
     "pickle.dumps and loads serialise Python objects to bytes; never unpickle untrusted data, it can run "
     "arbitrary code."),
    ("logging", "logging: loggers and handlers",
     "logging.getLogger(__name__) returns a module logger; basicConfig sets a level and format; handlers send "
     "records to streams or files."),
    ("argparse", "argparse: command-line arguments",
     "ArgumentParser.add_argument declares positional arguments and --options with types and defaults; "
     "parse_args returns a namespace; subparsers implement sub-commands."),
    ("pathlib", "pathlib.Path",
     "Path('dir') / 'file.txt' joins paths; read_text and write_text handle files; glob('*.py') lists matches; "
     "mkdir(parents=True, exist_ok=True) creates folders."),
    ("unittest", "unittest and pytest",
     "unittest.TestCase methods assertEqual and assertRaises check behaviour; pytest collects test_ functions "
     "and uses plain assert statements with fixtures and parametrize."),
    ("typing", "typing: type hints",
     "list[int], dict[str, int] and int | None annotate types; Protocol describes structural interfaces; "
     "TypeVar parametrises generic functions; hints are not checked at run time."),
    ("contextlib", "contextlib and the with statement",
     "A context manager's __enter__ and __exit__ run around a with block; contextlib.contextmanager turns a "
     "generator into one; suppress ignores chosen exceptions."),
    ("numpy-arrays", "NumPy arrays",
     "np.array builds n-dimensional arrays; operations broadcast element-wise; arr.T transposes; arr @ other "
     "multiplies matrices; axis arguments reduce along dimensions."),
    ("sqlite3", "sqlite3: SQL databases",
     "sqlite3.connect('db.sqlite') opens a database; cursor.execute runs SQL with ? placeholders; commit saves "
     "changes; fetchall returns rows as tuples."),
    ("http-requests", "HTTP requests with urllib",
     "urllib.request.urlopen(url) fetches a resource; status codes and headers come with the response; "
     "urllib.parse.urlencode builds query strings."),
    ("csv-module", "csv: reading and writing CSV files",
     "csv.reader splits lines into fields, honouring quotes; csv.DictReader maps each row to a dict by the "
     "header; csv.writer quotes fields that contain separators."),
    ("hashlib", "hashlib: cryptographic hashes",
     "hashlib.sha256(data).hexdigest() hashes bytes; use hmac for keyed hashes and secrets for tokens."),
    ("random-module", "random: pseudo-random numbers",
     "random.seed fixes the sequence; randint, choice, shuffle and sample draw values; use the secrets module "
     "for security-sensitive randomness."),
    ("os-environ", "os.environ and environment variables",
     "os.environ.get('HOME') reads an environment variable with a default; changes affect child processes "
     "started later."),
    ("time-sleep", "time.sleep, time.time and time.perf_counter",
     "time.perf_counter() measures elapsed time precisely; time.time() is wall-clock seconds since the epoch; "
     "time.sleep(s) pauses the thread."),
    ("multiprocessing", "multiprocessing: process pools",
     "multiprocessing.Pool(n).map(f, items) runs f in worker processes; arguments and results are pickled; "
     "guard the entry point with if __name__ == '__main__'."),
    ("struct-bytes", "bytes, bytearray and struct",
     "bytes are immutable byte strings; encode and decode convert text with a codec such as UTF-8; "
     "struct.pack('<I', n) packs binary records."),
)
