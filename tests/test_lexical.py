"""Tokenizing for keyword search: identifiers, flags, versions, non-Latin text."""

import pytest

from rag_search.store.lexical import identifiers, match_expression, query_terms, terms


@pytest.mark.parametrize(
    "text, expected",
    [
        ("selfHeal", ["selfheal", "self", "heal"]),
        ("kube-proxy", ["kubeproxy", "kube", "proxy"]),
        ("--max-tokens", ["maxtokens", "max", "tokens"]),
        ("v1.30.0", ["v1300", "v1", "30", "0"]),
        ("use_project_venv()", ["useprojectvenv", "use", "project", "venv"]),
        ("HTTPServer getHTTP2Client", ["httpserver", "http", "server", "gethttp2client", "get", "http2", "client"]),
        ("k8s", ["k8s"]),
        ("The cluster is down", ["cluster", "down"]),
        ("run it with --all", ["run", "all"]),
        ("naïve café", ["naïve", "café"]),
        ("Привет мир", ["привет", "мир"]),
        ("東京都の天気", ["東京", "京都", "都の", "の天", "天気"]),
        ("k0s 東京", ["東京", "k0s"]),
    ],
)
def test_terms(text, expected):
    assert terms(text) == expected


def test_identifier_and_its_spellings_share_terms():
    assert {"selfheal"} <= set(terms("set selfHeal: true")) & set(terms("self-heal")) & set(terms("selfheal"))


def test_match_expression_quotes_unique_terms_and_ignores_stopwords_only_queries():
    assert match_expression(query_terms('what is "kube-proxy"?')).expression == '"kubeproxy" OR "kube" OR "proxy"'
    assert match_expression(query_terms("what is it")) is None
    assert match_expression(query_terms("")) is None


def test_common_terms_add_to_the_score_of_what_rarer_terms_select():
    match = match_expression(["rotate", "tls", "controller"], frozenset({"controller"}))
    assert match.expression == '("rotate" OR "tls") AND ("rotate" OR "tls" OR "controller" OR "controller")'
    assert match.scale == 2.0, "each term is named twice"
    assert match_expression(["controller"], frozenset({"controller"})) == ('"controller"', 1.0), "no rarer term: plain"


@pytest.mark.parametrize("query, expected", [
    ("what was the fix for LED-517?", ["led517"]),  # a ticket id
    ("upgrade from v1.30.0 to v1.31", ["v1300", "v131"]),  # versions
    ("what does max_tokens default to", ["maxtokens"]),  # an underscore joins only identifiers
    ("is HTTP/2 supported", ["http2"]),
    ("why is `selfHeal` off and what is `prune`", ["selfheal", "prune"]),  # anything in a code span
    ("a read-only, well-known and/or built-in volume", []),  # hyphenated prose is not an identifier
    ("the 1.5 release in 2024-05", []),  # numbers alone are not
])
def test_identifiers_of_a_query_are_the_joined_terms_of_its_identifiers(query, expected):
    """An exact identifier held by one page must not rank below a page that lacks it; these are the query's
    identifiers, as the keyword index stores them whole."""
    assert identifiers(query) == expected
