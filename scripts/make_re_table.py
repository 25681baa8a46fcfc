#!/usr/bin/env python3
"""make_re_table.py — the known answers of base/match.c, from Python's own `re`.

Writes src/tests/re_table.h: rows {pattern, name, expected} where expected is
  1 / 0  re.match(pattern, name) is / is not None (compressed-tensors' rule for "re:"),
  'E'    Python refuses the pattern (re.error): base/match.c must refuse it too,
  'R'    valid in Python but outside the subset base/match.c takes: it must refuse it.
Names whose answer depends on Unicode \\d \\w \\s are answered as with re.ASCII (base/match.h:
ASCII classes), and the row says so in a comment.

Usage: python3 scripts/make_re_table.py > src/tests/re_table.h   (Python 3.11 wrote the one
checked in; test_recipe.c reads it).
"""
import re
import sys

NAMES = [
    "", "a", "aa", "aaa", "ab", "abc", "b", "ba", "x{y", "x}y", "a\n", "a\nb", "\n",
    "lm_head", "model.layers.0.mlp.gate", "model.layers.3.mlp.gate_proj",
    "model.layers.12.mlp.gate", "model.layers.1234.mlp.gate", "model.layers.2.self_attn.o_proj",
    "model.layers.10.self_attn.q_proj", "model.embed_tokens", "model.norm",
    "model.layers.0.mlp.experts.7.down_proj", "model.layers.0.block_sparse_moe.gate",
    "mlp.gate", "xmlp.gate", "a.b", "a-b", "a]b", "a^b", "a$b", "a\\b", "A_1", "_", "9",
    "tab\there", "sp ace", "caf\u00e9", "\u00e9", "\u0661", "x\u00e9y", "\U0001F600", "aaaaaaaaab",
]

# (pattern, names or None for all NAMES)
SUPPORTED = [
    ("a", None), ("ab", None), ("", None), ("abc$", None), ("a$", None), ("a\\Z", None),
    ("^a", None), ("\\Aa", None), ("a|b", None), ("|a", None), ("a|", None), ("(a|b)c", None),
    ("(?:a|b)+$", None), ("(?P<x>a)b", None), ("a*", None), ("a+$", None), ("a?b", None),
    ("a*?b", None), ("a+?$", None), ("a??b", None), ("a{2}", None), ("a{2}$", None),
    ("a{2,}", None), ("a{,2}$", None), ("a{1,2}$", None), ("a{0}b", None), ("a{,}$", None),
    ("a{2,3}?$", None), ("x{y", None), ("x{", None), ("x{}y", None), ("x{a}", None),
    ("x{1,a}", None), ("{", None), ("}", None), ("x}y", None), ("]", None), ("a]b", None),
    (".", None), (".$", None), ("..", None), ("a.b", None), ("a\\.b", None), ("a\\-b", None),
    ("[ab]+$", None), ("[^ab]", None), ("[a-c]+$", None), ("[]a]", None), ("[^]a]", None),
    ("[a-]", None), ("[-a]", None), ("a[-]b", None), ("[\\]]", None), ("[\\d]", None),
    ("[\\w.]+$", None), ("[^\\w]", None), ("[\\W]", None), ("[\\s]", None), ("[\\S]+$", None),
    ("[\\D]", None), ("[.]", None), ("[\\\\]", None), ("a[\\\\]b", None), ("[\\n]", None),
    ("[\\b]", None), ("[}{]", None), ("x[}{]y", None), ("[\\x41-\\x5a]", None),
    ("[\u00e9]", None), ("caf.$", None), ("caf\u00e9", None), ("[^a-z]", None), ("\\d", None),
    ("\\d+$", None), ("\\D", None), ("\\w+$", None), ("\\W", None), ("\\s", None),
    ("\\S+$", None), (".*\\s", None), ("\\ba", None), ("a\\b", None), ("\\Ba", None),
    ("a\\B", None), ("\\x61", None), ("\\u0061", None), ("\\U00000061", None), ("\\t", None),
    ("tab\\there", None), ("\\n", None), ("a\\n", None), ("a\\n$", None), ("a\\^b", None),
    ("a\\$b", None), ("a\\\\b", None), ("\\(", None), ("\\*", None), ("\\{", None),
    ("\\}", None), ("\\]", None), ("\\/", None), ("\\@", None), ("\\#", None), ("\\ ", None),
    ("sp ace", None), ("\\!", None), ("\\\u00e9", None), ("(a*)*$", None), ("(a*)+b", None),
    ("(a|aa)*b", None), ("(a+)+$", None), ("((a*)*)*b", None), ("(|a)+$", None),
    ("()*", None), ("(?:)", None), ("a(?:b|)$", None), ("^$", None), ("$", None),
    ("^", None), ("a^b", None), ("a$b", None), ("$a", None),
    # compressed-tensors' ignore/targets as written by llm-compressor recipes
    ("lm_head", None), ("re:lm_head", None), (".*mlp.gate$", None), (".*mlp.gate", None),
    (".*gate", None), (".*\\.gate$", None), ("mlp.gate", None), ("model\\.layers\\.[0-2]\\..*",
     None), ("model\\.layers\\.[0-9]{1,3}\\.mlp\\.gate", None), (".*self_attn.(q|k|v)_proj$",
     None), (".*experts\\.\\d+\\.down_proj", None), (".*block_sparse_moe.gate$", None),
    (".*embed_tokens$", None), (".*norm$", None), ("model.layers.1.*", None),
    (".*layers\\.(1|12)\\..*", None), ("(?:model\\.)?layers", None), (".*(?:gate|up)_proj", None),
    ("model\\.layers\\.\\d{2}\\.", None),
    # what Python refuses (E)
    ("(", None), (")", None), ("a)", None), ("(a", None), ("[a", None), ("[]", None),
    ("[^]", None), ("*", None), ("+a", None), ("?", None), ("a**", None), ("a*+*", None),
    ("a{2}{3}", None), ("a{3,2}", None), ("{2}", None), ("x|*", None), ("(*a)", None),
    ("^*", None), ("$+", None), ("\\b*", None), ("\\A?", None), ("[z-a]", None),
    ("[\\d-z]", None), ("[a-\\d]", None), ("\\q", None), ("\\i", None), ("[\\q]", None),
    ("[\\A]", None), ("\\x4", None), ("\\xZZ", None), ("\\u12", None), ("\\", None),
    ("a\\", None), ("(?P<1>a)", None), ("(?P<>a)", None), ("(?Q)", None), ("(?", None),
    ("a*??", None),
]

UNSUPPORTED = [  # valid in Python, refused here (R)
    "(a)\\1", "(a)(b)\\2", "(?P<x>a)(?P=x)", "a(?=b)", "a(?!b)", "(?<=a)b", "(?<!a)b",
    "(?i)a", "(?s).", "(?#c)a", "(?>a)", "(a)?(?(1)b|c)", "\\0", "\\012", "[\\1]",
    "\\N{LATIN SMALL LETTER A}", "a*+", "a++b", "a?+", "a{2}+", "(?x)a b",
]


def answer(pat, name):
    """(expected, note) for pattern and name."""
    try:
        rx = re.compile(pat)
    except re.error:
        return "E", ""
    got = rx.match(name) is not None
    ascii_got = re.compile(pat, re.ASCII).match(name) is not None
    if got != ascii_got:
        return ("1" if ascii_got else "0"), "re.ASCII"
    return ("1" if got else "0"), ""


def c_string(s):
    out = []
    for b in s.encode("utf-8"):
        ch = chr(b)
        if ch == '"' or ch == "\\" or ch == "?" or b < 0x20 or b >= 0x7F:
            out.append("\\%03o" % b)
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def main():
    rows = []
    for pat, names in SUPPORTED:
        for name in names or NAMES:
            exp, note = answer(pat, name)
            rows.append((pat, name, exp, note))
            if exp == "E":
                break  # one row says it: refused
    for pat in UNSUPPORTED:
        try:
            re.compile(pat)
        except re.error:
            sys.exit("make_re_table.py: %r is refused by Python too: move it" % pat)
        rows.append((pat, "a", "R", ""))
    w = sys.stdout.write
    w("/* re_table.h — written by scripts/make_re_table.py with Python %d.%d: re.match(pattern, "
      "name)\n * as base/match.c must answer it (1/0), 'E' Python refuses the pattern, 'R' "
      "outside the\n * subset (base/match.h). Do not edit: run the script. */\n"
      % sys.version_info[:2])
    w("static const struct re_row {\n    const char *pattern, *name;\n    char expected;\n} "
      "re_table[] = {\n")
    for pat, name, exp, note in rows:
        w("    {%s, %s, '%s'},%s\n" % (c_string(pat), c_string(name), exp,
                                       " /* %s */" % note if note else ""))
    w("};\n")


if __name__ == "__main__":
    main()
