"""gitleaks' published rule set, used as data: provider token formats without a hand-grown list of our own.

`data/gitleaks.toml` is gitleaks' `config/gitleaks.toml` at commit 420a0f55f4a7a03dfe701ceb1f4f66a7c68b26b4
(MIT licence in `data/LICENSE.gitleaks`), kept verbatim. It is read with tomllib and run with the stdlib `re`
after a small Go-RE2 to Python translation (`_translate`), the way gitleaks' detector runs it: a keyword
prefilter, the regex, the first non-empty capture group as the secret, an entropy threshold, the global and
per-rule allowlists and stopwords. Rules in EXCLUDED are replaced by our own (secret_rules.py): the generic
key-name rules, private key blocks, a rule whose bare 40-hex alternative matches commit SHAs, and one that needs
a file path.
"""

import functools
import math
import re
import tomllib
from collections import Counter
from pathlib import Path

GITLEAKS_TOML = Path(__file__).with_name("data") / "gitleaks.toml"
EXCLUDED = frozenset({
    "generic-api-key", "kubernetes-secret-yaml", "hashicorp-tf-password", "nuget-config-password", "freemius-secret-key",
    "private-key", "sourcegraph-access-token", "pkcs12-file",
})


def _translate(pattern: str) -> str:
    """Go RE2 -> Python `re`: mid-pattern flags become scoped groups (closed at `|` and `)`), `\\z` -> `\\Z`,
    and `(?:.|\\s)` -> `[\\s\\S]` (same meaning; the alternation is exponential in a backtracking engine)."""
    pattern = pattern.replace("(?:.|\\s)", "[\\s\\S]")
    out: list[str] = []
    opened: list[int] = [0]
    openers: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            out.append("\\Z" if pattern[i + 1] == "z" else pattern[i : i + 2])
            i += 2
        elif c == "[":
            j = i + 1 + (pattern[i + 1] == "^")
            j += pattern[j] == "]"
            while pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            out.append(pattern[i : j + 1])
            i = j + 1
        elif c == "(":
            flags = re.match(r"\(\?([imsU-]+)\)", pattern[i:])
            if flags and out:
                out.append(f"(?{flags.group(1)}:")
                openers.append(out[-1])
                opened[-1] += 1
                i += len(flags.group(0))
            elif flags:
                out.append(flags.group(0))
                i += len(flags.group(0))
            else:
                opened.append(0)
                out.append(c)
                i += 1
        elif c == "|":
            count = opened[-1]
            out.append(")" * count + "|" + "".join(openers[len(openers) - count :] if count else []))
            i += 1
        elif c == ")":
            count = opened.pop()
            del openers[len(openers) - count :]
            out.append(")" * count + ")")
            i += 1
        else:
            out.append(c)
            i += 1
    out.append(")" * opened.pop())
    return "".join(out)


@functools.cache
def _go(pattern: str) -> re.Pattern:
    """A rule's regex, compiled on first use: compiling all 200 took 0.035 s, and a page's keywords select a few."""
    return re.compile(_translate(pattern), re.ASCII)


def entropy(data: str) -> float:
    total = len(data)
    return -sum(c / total * math.log2(c / total) for c in Counter(data).values()) if data else 0.0


class _LazyLine:
    """The line around a match, computed only if a line-targeted allowlist asks for it."""

    def __init__(self, text: str, start: int, end: int):
        self.text, self.start, self.end = text, start, end

    def __str__(self) -> str:
        text = self.text
        eol = text.find("\n", self.end)
        return text[text.rfind("\n", 0, self.start) + 1 : eol if eol >= 0 else len(text)]


class _Allowlist:
    def __init__(self, data: dict):
        self.regexes = [_go(p) for p in data.get("regexes", [])]
        self.stopwords = [s.lower() for s in data.get("stopwords", [])]
        self.target = data.get("regexTarget", "secret")
        self.all = data.get("condition", "OR").upper() == "AND"
        self.has_paths = bool(data.get("paths"))

    def allows(self, secret: str, match: str, line) -> bool:
        if self.all and self.has_paths:  # an AND with a path condition never holds without a path
            return False
        target = secret if self.target == "secret" else match if self.target == "match" else str(line)
        checks = []
        if self.regexes:
            checks.append(any(r.search(target) for r in self.regexes))
        if self.stopwords:
            low = secret.lower()
            checks.append(any(word in low for word in self.stopwords))
        if not checks:
            return False
        return all(checks) if self.all else any(checks)


def _trie_regex(words: list[str]) -> str:
    """An alternation of `words` factored as a trie (ab|ac -> a(?:b|c)), which `re` matches far faster than a flat one."""
    trie: dict = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict) -> str:
        alternatives = [re.escape(ch) + build(child) for ch, child in sorted(node.items()) if ch]
        if not alternatives:
            return ""
        body = alternatives[0] if len(alternatives) == 1 else "(?:" + "|".join(alternatives) + ")"
        return f"(?:{body})?" if "" in node else body

    return build(trie)


class GitleaksRules:
    """The rule set, each rule compiled on first use; `spans(text)` finds what its rules match, as gitleaks would."""

    def __init__(self, path: Path = GITLEAKS_TOML, excluded: frozenset[str] = EXCLUDED):
        config = tomllib.loads(path.read_text(encoding="utf-8"))
        self.allowlist = _Allowlist(config.get("allowlist", {}))
        self.rules = []
        for rule in config["rules"]:
            if "regex" not in rule or "path" in rule or rule["id"] in excluded:
                continue
            self.rules.append(
                (
                    rule["id"],
                    rule["regex"],
                    tuple(k.lower() for k in rule.get("keywords", [])),
                    float(rule.get("entropy", 0.0)),
                    [_Allowlist(a) for a in rule.get("allowlists", [])],
                )
            )
        # Keyword -> rules: a rule runs only when one of its keywords is in the lower-cased text (gitleaks' prefilter).
        # All keywords are found in one pass by a trie-shaped regex in a lookahead (a match at every keyword start);
        # keywords nested in a longer one found at the same spot come from `_contained`. 2.7x faster than `in` tests.
        self._always = [i for i, rule in enumerate(self.rules) if not rule[2]]
        self._by_keyword: dict[str, list[int]] = {}
        for i, rule in enumerate(self.rules):
            for keyword in rule[2]:
                self._by_keyword.setdefault(keyword, []).append(i)
        keywords = sorted(self._by_keyword)
        self._keyword_re = re.compile("(?=(" + _trie_regex(keywords) + "))")
        self._contained = {k: [i for j in keywords if j in k for i in self._by_keyword[j]] for k in keywords}

    def spans(self, text: str, low: str | None = None) -> list[tuple[int, int, str]]:
        low = text.lower() if low is None else low
        selected = set(self._always)
        for m in self._keyword_re.finditer(low):
            selected.update(self._contained[m.group(1)])
        found = []
        for index in sorted(selected):
            rule_id, pattern, keywords, threshold, allowlists = self.rules[index]
            regex = _go(pattern)
            for m in regex.finditer(text):
                group = next((g for g in range(1, regex.groups + 1) if m.group(g)), 0)
                start, end = m.span(group)
                if not group:
                    while start < end and text[start] == "\n":
                        start += 1
                    while end > start and text[end - 1] == "\n":
                        end -= 1
                secret = text[start:end]
                if not secret:
                    continue
                line = _LazyLine(text, m.start(), m.end())
                if self.allowlist.allows(secret, m.group(0), line):
                    continue
                if threshold and (entropy(secret) <= threshold or (rule_id.startswith("generic") and not any(c.isdigit() for c in secret))):
                    continue
                if any(a.allows(secret, m.group(0), line) for a in allowlists):
                    continue
                found.append((start, end, rule_id))
        return found
