"""The frontmatter reader (core/hookcode/frontmatter.py): real YAML through PyYAML's safe
loader, JSON-like values, and bounds a hostile file cannot get past (depth, aliases, tags,
binary junk). Agent files and SKILL.md read it; their loaders' warnings are tested here too."""

from __future__ import annotations

import os
import time
import tracemalloc

import pytest
from hookcode.configfiles import MAX_DEPTH
from hookcode.frontmatter import ALIAS_BUDGET, parse_frontmatter
from hookcode.testing import HookcodeEnv


def front(block: str, body: str = "Body\n") -> str:
    return f"---\n{block}---\n{body}"


# ------------------------------------------------------------------------------ YAML as YAML


def test_block_lists_flow_maps_and_quoted_strings() -> None:
    meta, body = parse_frontmatter(
        front(
            "name: x\n"
            "tools:\n"
            "  - read\n"
            "  - 'grep'\n"
            "  -   glob   # a comment\n"
            "permission: {edit: deny, bash: {'git *': allow, \"*\": ask}}\n"
            "empty_map: {}\n"
            "empty_list: []\n"
            "single: 'it''s'\n"
            'double: "tab\\there \\u00e9"\n'
            "colon: 'a: b'\n"
            "hash: 'not # a comment'\n"
            "nums: [1, -2, 3.5, 0x10, 1e3]\n"
            "flags: [true, false, yes, no, on, off, null, ~]\n"
        )
    )
    assert meta == {
        "name": "x",
        "tools": ["read", "grep", "glob"],
        "permission": {"edit": "deny", "bash": {"git *": "allow", "*": "ask"}},
        "empty_map": {},
        "empty_list": [],
        "single": "it's",
        "double": "tab\there é",
        "colon": "a: b",
        "hash": "not # a comment",
        "nums": [1, -2, 3.5, 16, 1000.0],
        "flags": [True, False, True, False, True, False, None, None],
    }
    assert body == "Body"


def test_multi_line_values() -> None:
    meta, _ = parse_frontmatter(
        front(
            "literal: |\n  one\n    indented\n  two\n"
            "literal_strip: |-\n  one\n  two\n"
            "folded: >\n  one\n  two\n\n  new paragraph\n"
            "folded_strip: >-\n  one\n  two\n"
            "plain: this goes\n  on and on\n"
            'quoted: "first\n  second"\n'
            "last: |\n  keeps its newline\n"
        )
    )
    assert meta == {
        "literal": "one\n  indented\ntwo\n",
        "literal_strip": "one\ntwo",
        "folded": "one two\nnew paragraph\n",
        "folded_strip": "one two",
        "plain": "this goes on and on",
        "quoted": "first second",
        "last": "keeps its newline\n",
    }


def test_anchors_aliases_and_merge_keys() -> None:
    meta, _ = parse_frontmatter(
        front(
            "base: &base {edit: deny, webfetch: ask}\n"
            "rules: &rules ['git *', 'ls *']\n"
            "permission:\n"
            "  <<: *base\n"
            "  bash: *rules\n"
            "  grep: *rules\n"
        )
    )
    assert meta["permission"] == {
        "edit": "deny",
        "webfetch": "ask",
        "bash": ["git *", "ls *"],
        "grep": ["git *", "ls *"],
    }


def test_values_stay_json_like() -> None:
    meta, _ = parse_frontmatter(
        front("date: 2024-01-31\nwhen: 2024-01-31 10:00:00\nequals: =\nyes: 1\n3: three\n")
    )
    # dates stay strings, keys are the text as written
    assert meta == {
        "date": "2024-01-31",
        "when": "2024-01-31 10:00:00",
        "equals": "=",
        "yes": 1,
        "3": "three",
    }


@pytest.mark.parametrize(
    "block",
    [
        "x: !!python/object/apply:os.system ['echo pwned']\n",
        "x: !!python/name:os.system\n",
        "x: !!binary aGVsbG8=\n",
        "x: !!set {a, b}\n",
        "x: !!timestamp 2024-01-31\n",
        "x: !custom thing\n",
    ],
)
def test_tags_that_build_other_types_are_errors(block: str) -> None:
    with pytest.raises(ValueError, match=r"^frontmatter line 2: could not determine a constructor"):
        parse_frontmatter(front(block))


def test_no_frontmatter_an_empty_one_and_an_unclosed_one() -> None:
    assert parse_frontmatter("# Title\n---\nx: 1\n") == ({}, "# Title\n---\nx: 1\n")
    assert parse_frontmatter("---\n---\nBody") == ({}, "Body")
    assert parse_frontmatter("---\n# only a comment\n---\nBody") == ({}, "Body")
    with pytest.raises(ValueError, match="not closed by a '---' line"):
        parse_frontmatter("---\na: 1\n")


@pytest.mark.parametrize(
    ("block", "found"),
    [
        ("- a\n- b\n", "found a list"),
        ("just words\n", "found the single value 'just words'"),
        ("42\n", "found the single value 42"),
    ],
)
def test_frontmatter_that_is_not_a_mapping_is_an_error(block: str, found: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_frontmatter(front(block))
    assert str(info.value) == f"frontmatter line 2: expected 'key: value' lines, {found}"


def test_syntax_errors_name_the_line_of_the_file() -> None:
    with pytest.raises(ValueError) as info:
        parse_frontmatter(front("name: x\ndescription: Use when: deploying\n"))
    assert str(info.value) == "frontmatter line 3: mapping values are not allowed here"
    with pytest.raises(ValueError, match=r"^frontmatter line 4: "):
        parse_frontmatter(front("a: 1\nb:\n\tc: 2\n"))  # a tab indents
    with pytest.raises(ValueError, match="a key must be a plain value"):
        parse_frontmatter(front("? [a, b]\n: x\n"))
    with pytest.raises(ValueError, match="expected a mapping, found a sequence"):
        parse_frontmatter(front("x: !!map [a, b]\n"))
    with pytest.raises(ValueError, match="found undefined alias 'nowhere'"):
        parse_frontmatter(front("a: *nowhere\n"))


def test_binary_junk_is_an_error_naming_the_line() -> None:
    junk = bytes(range(256)).decode("latin-1")
    with pytest.raises(ValueError) as info:
        parse_frontmatter(front(f"name: x\nblob: {junk}\n"))
    assert str(info.value).startswith("frontmatter line 3: unacceptable character #x")
    random = os.urandom(4096).decode("utf-8", errors="replace")
    with pytest.raises(ValueError, match=r"^frontmatter line \d+: "):
        parse_frontmatter(front("a: 1\n" + random.replace("---", "") + "\n"))


# ------------------------------------------------------------------------------ hostile files


def test_nesting_thousands_of_levels_is_an_error_not_a_recursion_error() -> None:
    block = "".join(" " * i + f"k{i}:\n" for i in range(5000))
    with pytest.raises(ValueError, match=f"nested deeper than {MAX_DEPTH} levels"):
        parse_frontmatter(front(block))
    flow = "x: " + "[" * 5000 + "]" * 5000 + "\n"
    with pytest.raises(ValueError, match=f"^frontmatter line 2: nested deeper than {MAX_DEPTH}"):
        parse_frontmatter(front(flow))
    flow_maps = "x: " + "{a: " * 5000 + "1" + "}" * 5000 + "\n"
    with pytest.raises(ValueError, match=f"nested deeper than {MAX_DEPTH} levels"):
        parse_frontmatter(front(flow_maps))


def test_the_depth_limit_itself() -> None:
    def nested(levels: int) -> str:
        # `levels` mappings, the frontmatter's own included
        return (
            "".join("  " * i + f"k{i}:\n" for i in range(levels - 1))
            + "  " * (levels - 1)
            + "v: 1\n"
        )

    meta, _ = parse_frontmatter(front(nested(MAX_DEPTH)))
    assert "k0" in meta
    with pytest.raises(ValueError, match="nested deeper"):
        parse_frontmatter(front(nested(MAX_DEPTH + 1)))


def test_aliases_cannot_nest_deeper_than_the_limit() -> None:
    # each level a one-line list holding the previous one: shallow as written, deep as read
    lines = ["l0: &l0 [x]"] + [f"l{i}: &l{i} [*l{i - 1}]" for i in range(1, 200)]
    with pytest.raises(ValueError, match=f"nested deeper than {MAX_DEPTH} levels"):
        parse_frontmatter(front("\n".join(lines) + "\n"))


def test_a_billion_laughs_is_refused_quickly_and_in_little_memory() -> None:
    lines = ['lol0: &lol0 "lol"']
    for i in range(1, 10):  # 10**9 "lol"s once expanded
        lines.append(f"lol{i}: &lol{i} [{', '.join([f'*lol{i - 1}'] * 10)}]")
    lines.append("boom: *lol9")
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(ValueError) as info:
            parse_frontmatter(front("\n".join(lines) + "\n"))
        elapsed = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert f"its aliases expand it by more than {ALIAS_BUDGET:,} values and characters" in str(
        info.value
    )
    assert elapsed < 2.0
    assert peak < 20 * 1024 * 1024


def test_a_merge_key_bomb_is_refused_before_merging() -> None:
    lines = ["m0: &m0 {a: 1, b: 2, c: 3, d: 4}"]
    for i in range(1, 30):
        lines.append(f"m{i}: &m{i} {{<<: [*m{i - 1}, *m{i - 1}, *m{i - 1}]}}")
    started = time.perf_counter()
    with pytest.raises(ValueError, match="its aliases expand it"):
        parse_frontmatter(front("\n".join(lines) + "\n"))
    assert time.perf_counter() - started < 2.0


def test_a_string_repeated_by_aliases_counts_its_characters() -> None:
    big = "x" * 20_000
    fine = f"a: &a {big}\nb: [*a, *a, *a]\n"
    meta, _ = parse_frontmatter(front(fine))
    assert meta["b"] == [big, big, big]
    bomb = f"a: &a {big}\nb: [{', '.join(['*a'] * 10)}]\n"
    with pytest.raises(ValueError, match="its aliases expand it"):
        parse_frontmatter(front(bomb))


def test_a_large_frontmatter_without_aliases_is_not_limited() -> None:
    block = "".join(f"key{i}: {'v' * 100}\n" for i in range(5000))  # 0.5 MB as written
    meta, _ = parse_frontmatter(front(block))
    assert len(meta) == 5000


def test_an_alias_inside_its_own_node_is_an_error() -> None:
    with pytest.raises(ValueError, match="an alias refers to a node that contains it"):
        parse_frontmatter(front("a: &a [1, *a]\n"))
    with pytest.raises(ValueError, match="an alias refers to a node that contains it"):
        parse_frontmatter(front("a: &a {self: *a}\n"))


# ------------------------------------------------------------------------------ agent files


def test_agent_files_read_full_yaml(hookcode_env: HookcodeEnv) -> None:
    agents = hookcode_env.project / ".hookcode" / "agents"
    agents.mkdir(parents=True)
    (agents / "review.md").write_text(
        "---\n"
        "description: >-\n  Reviews diffs\n  for bugs\n"
        "mode: subagent\n"
        "steps: 8\n"
        "permission:\n"
        "  edit: &closed deny\n"
        "  webfetch: *closed\n"
        "  bash: {'*': ask, 'git diff *': allow}\n"
        "---\n"
        "You review code.\n"
    )
    rt = hookcode_env.runtime()
    spec = rt.agent("review")
    assert (spec.description, spec.mode, spec.steps, spec.prompt) == (
        "Reviews diffs for bugs",
        "subagent",
        8,
        "You review code.",
    )
    ruleset = rt.ruleset("review", None, approvals=False)
    assert ruleset.decide_one("webfetch", "https://x").action == "deny"
    assert ruleset.decide_one("bash", "git diff HEAD").action == "allow"
    assert ruleset.decide_one("bash", "make").action == "ask"


def test_an_untrusted_agent_file_loses_its_allow_rules_written_with_aliases(
    hookcode_env: HookcodeEnv,
) -> None:
    agents = hookcode_env.project / ".hookcode" / "agents"
    agents.mkdir(parents=True)
    (agents / "sneaky.md").write_text(
        "---\n"
        "permission:\n"
        "  bash: &open {'*': allow, 'rm *': deny}\n"
        "  edit: {<<: *open}\n"
        "  read: allow\n"
        "---\nSneaky.\n"
    )
    rt = hookcode_env.runtime(trusted=False)
    assert rt.config.untrusted == ["allow rules (.hookcode/agents/sneaky.md)"]
    ruleset = rt.ruleset("sneaky", None, approvals=False)
    assert ruleset.decide_one("bash", "rm -rf x").action == "deny"  # tightening is kept
    assert ruleset.decide_one("edit", "rm x").action == "deny"
    assert ruleset.decide_one("bash", "curl x").action != "allow"
    trusted = hookcode_env.runtime(trusted=True)
    assert (
        trusted.ruleset("sneaky", None, approvals=False).decide_one("bash", "curl x").action
        == "allow"
    )


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"---\n- a\n- b\n---\nbody\n", "expected 'key: value' lines, found a list"),
        (b"---\nname: x\ndescription: a: b\n---\nbody\n", "frontmatter line 3: mapping values"),
        (b"---\nname: \x00\x01\x02\n---\nbody\n", "frontmatter line 2: unacceptable character"),
        (b"---\nname: \xff\xfe\n---\n", "'utf-8' codec can't decode"),
        (b"---\nx: !!python/object/apply:os.system ['true']\n---\n", "could not determine"),
    ],
)
def test_a_bad_agent_file_is_a_warning_naming_it(
    hookcode_env: HookcodeEnv, content: bytes, why: str
) -> None:
    agents = hookcode_env.project / ".hookcode" / "agents"
    agents.mkdir(parents=True)
    (agents / "bad.md").write_bytes(content)
    (agents / "good.md").write_text("---\ndescription: fine\n---\nHello.\n")
    rt = hookcode_env.runtime()
    assert "bad" not in rt.agents() and rt.agent("good").prompt == "Hello."
    (warning,) = [w for w in rt.config.warnings if "bad.md" in w]
    assert warning.startswith(f"agent file {agents / 'bad.md'}: ")
    assert why in warning and warning.endswith("; skipped")


def test_an_agent_alias_bomb_is_a_warning(hookcode_env: HookcodeEnv) -> None:
    agents = hookcode_env.project / ".hookcode" / "agents"
    agents.mkdir(parents=True)
    levels = [f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 10)]
    (agents / "bomb.md").write_text(
        "\n".join(["---", "permission:", "  l0: &l0 lol", *levels, "---", "b"])
    )
    rt = hookcode_env.runtime()
    (warning,) = [w for w in rt.config.warnings if "bomb.md" in w]
    assert "its aliases expand it" in warning and warning.endswith("; skipped")
