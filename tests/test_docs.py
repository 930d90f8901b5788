"""The commands the README, the documents of docs/ and the decks' headers show must work as
written, so that they cannot rot: every `bin/empic DECK` is run for 2 steps, then every
`empic-diag` / `python3 -m diag` command is run on that output, from another folder.

Commands are taken from the code blocks and inline code of README.md and docs/*.md, and
from the deck header lines that start with "#   $ ". Options that need the full run are dropped: `--it N` (that
dump does not exist after 2 steps) and `--fit T0,T1` (no growth yet). Synopsis lines (with
[...] or upper-case placeholders such as DECK, OUTDIR) are not commands."""

import glob
import os
import re
import shlex
import subprocess
import sys

import pytest

ROOT_ = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT_)
from diag import __main__ as diag_main  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EMPIC = os.path.join(ROOT, "bin", "empic")
START = re.compile(r"^(bin/empic|empic-diag|python3 -m diag)\s")
PLACEHOLDER = re.compile(r"\[|\b(DECK|OUTDIR|DIR|N|PREFIX|SUBCOMMAND)\b")
TARGET = re.compile(r"(^|\s)(out-[\w-]+|decks/[\w/-]+\.cfg)(\s|$)")  # a run or a deck


def markdown_commands(path):
    text = open(path).read()
    cmds = []
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S):
        cmds += [l.split("  #")[0].strip() for l in block.splitlines()]
    cmds += re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S))
    return [c for c in cmds if START.match(c) and not PLACEHOLDER.search(c) and TARGET.search(c)]


def readme_commands():
    return markdown_commands(os.path.join(ROOT, "README.md"))


def docs_files():
    return sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))


def header_commands(deck):
    return [l[len("#   $ "):].strip() for l in open(deck) if l.startswith("#   $ ")]


def all_commands():
    cmds = [("README.md", c) for c in readme_commands()]
    for doc in docs_files():
        cmds += [(os.path.relpath(doc, ROOT), c) for c in markdown_commands(doc)]
    for deck in sorted(glob.glob(os.path.join(ROOT, "decks", "*.cfg"))):
        cmds += [(os.path.relpath(deck, ROOT), c) for c in header_commands(deck)]
    return cmds


def output_of(deck):
    m = re.search(r'^\s*output\s*=\s*"([^"]+)"', open(deck).read(), re.M)
    return m.group(1) if m else "out"


def test_every_deck_header_shows_how_to_run_and_look():
    for deck in glob.glob(os.path.join(ROOT, "decks", "*.cfg")):
        cmds = header_commands(deck)
        assert any(c.startswith("bin/empic") for c in cmds), deck
        assert any(c.startswith("empic-diag") for c in cmds), deck


def test_docs_are_collected():
    assert docs_files(), "docs/*.md missing"
    assert any(c.startswith("bin/empic") for doc in docs_files() for c in markdown_commands(doc))


def test_readme_has_commands():
    cmds = readme_commands()
    assert any(c.startswith("bin/empic decks/") for c in cmds)
    assert any(c.startswith("empic-diag") for c in cmds)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """out-<name> -> output folder of a 2-step run of the deck that writes it."""
    if not os.path.isfile(EMPIC):
        pytest.skip("bin/empic is missing: build it with `make` first")
    tmp = tmp_path_factory.mktemp("docs")
    outs = {}
    decks = set()
    for _, c in all_commands():
        if c.startswith("bin/empic"):
            decks.update(a for a in shlex.split(c) if a.endswith(".cfg"))
    decks.add("decks/default.cfg")  # `make run`
    for deck in sorted(decks):
        path = os.path.join(ROOT, deck)
        out = tmp / output_of(path)
        res = subprocess.run([EMPIC, "--quiet", "--steps", "2", "--output", str(out), path],
                             capture_output=True, text=True, timeout=600,
                             env=dict(os.environ, OMP_NUM_THREADS="2"))
        assert res.returncode == 0, "%s:\n%s" % (deck, res.stderr)
        outs[output_of(path)] = str(out)
    return tmp, outs


def _diag_args(cmd, outs):
    args = shlex.split(cmd)
    args = ["empic-diag"] + args[3:] if cmd.startswith("python3 -m diag") else args
    fixed, skip = [], 0
    for k, a in enumerate(args):
        if skip:
            skip -= 1
            continue
        if a in ("--it",):
            skip = 1
            continue
        if a == "--fit":
            skip = 1 if k + 1 < len(args) and not args[k + 1].startswith("-") else 0
            continue
        if a.startswith("--fit="):
            continue
        fixed.append(outs.get(a, a))
    return fixed


@pytest.mark.parametrize("where, cmd", all_commands(), ids=lambda v: v if "/" not in v or
                         len(v) < 40 else v[:40])
def test_documented_command_works(runs, where, cmd, monkeypatch, capsys):
    tmp, outs = runs
    if cmd.startswith("bin/empic"):
        args = shlex.split(cmd)
        deck = [a for a in args if a.endswith(".cfg")]
        if args[1:] == deck:  # exactly what the fixture ran (for 2 steps)
            assert output_of(os.path.join(ROOT, deck[0])) in outs
            return
        extra = ["--steps", "2", "--quiet", "--output", str(tmp / "again")]
        res = subprocess.run([EMPIC] + args[1:-1] + extra + [os.path.join(ROOT, deck[-1])]
                             if deck else [EMPIC] + args[1:], capture_output=True, text=True,
                             timeout=600, env=dict(os.environ, OMP_NUM_THREADS="2"))
        assert res.returncode == 0, "%s: %s\n%s" % (where, cmd, res.stderr)
        return
    # in this process (a process per command costs a matplotlib start-up each; running
    # empic-diag itself from another folder is tests/test_diag_plots.py's)
    args = _diag_args(cmd, outs)
    monkeypatch.chdir(tmp)
    rc = diag_main.main(args[1:])
    out, err = capsys.readouterr()
    assert rc == 0, "%s: %s\n%s" % (where, cmd, err)
    assert ".png" in out or args[1] == "info", out
