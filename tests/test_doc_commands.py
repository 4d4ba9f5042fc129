"""Every `stream-guard ...` and `make ...` command the README, docs/MEASUREMENTS.md and deploy/*.md show names a
command, options and targets that exist: each is resolved against the parser the command really builds and the
Makefile's targets.
Cheap (no command is run), so it is in `make test`; tests/test_readme_commands.py runs the offline ones."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from cli_parsers import COMMANDS, parser_of
from labelled_data import REPO

DOCS = [REPO / "README.md", REPO / "docs" / "MEASUREMENTS.md", *sorted((REPO / "deploy").glob("*.md"))]
# Where a command starts: at the start, after a shell pipe or separator, or after `kubectl exec POD --`; behind
# environment assignments and a path (.venv/bin/). Elsewhere `stream-guard` is a name (`-n stream-guard`).
INVOCATION = re.compile(r"(?:^|[|;&(]\s*|\s--\s+)(?:[A-Z_]+=\S*\s+)*(?:\S*/)?(stream-guard|make)(?=\s|$)")
# Where it ends: a shell separator, a redirection, or a pipe into another program (`a | --b` is a usage line's
# alternative, not a pipe).
END = re.compile(r"&&|;|\s[12]?>|\s\|\s+(?=[A-Za-z./])")
OPTION = re.compile(r"(?:^|[\s\[|])(--?[A-Za-z][\w-]*)")


def shown_commands(path: Path) -> list[str]:
    """The command texts of a Markdown file: each line of its fenced blocks (continuations joined, comments
    dropped) and each inline code span that is a command or names one with an option."""
    lines: list[str] = []
    for token in MarkdownIt("commonmark").parse(path.read_text()):
        if token.type in ("fence", "code_block"):
            pending = ""
            for line in token.content.splitlines():
                text = pending + line.split(" #")[0].strip()
                pending = text[:-1] + " " if text.endswith("\\") else ""
                if not pending:
                    lines.append(text)
        for child in token.children or ():
            if child.type == "code_inline":
                # Prose names a command's option without the program (`backtest --topic`, `tail --to-end`).
                short = child.content.split(" ", 1)[0] in COMMANDS and " -" in child.content
                lines.append(f"stream-guard {child.content}" if short else child.content)
    return lines


def invocations(text: str) -> list[tuple[str, str]]:
    """(program, what follows it up to the end of that command) for each stream-guard / make call in `text`."""
    starts = list(INVOCATION.finditer(text))
    out = []
    for i, match in enumerate(starts):
        rest = text[match.end():starts[i + 1].start() if i + 1 < len(starts) else len(text)]
        out.append((match.group(1), END.split(rest, maxsplit=1)[0]))
    return out


def make_targets() -> set[str]:
    text = (REPO / "Makefile").read_text()
    return {name for line in re.findall(r"^([\w.$() -]+):(?!=)", text, re.M) for name in line.split()}


def problems(commands: list[tuple[str, str, str]], options: dict[str, set[str]], targets: set[str]) -> list[str]:
    """What does not exist, as `where: command: what`."""
    found = []
    for where, program, rest in commands:
        words = rest.split()
        if program == "make":
            unknown = [w for w in words if "=" not in w and not w.startswith("-") and w not in targets]
            found += [f"{where}: make {rest.strip()}: no target {w!r}" for w in unknown]
            continue
        if not words or words[0] in ("--help", "-h", "--version"):
            continue
        command = words[0]
        if command not in options:
            found.append(f"{where}: stream-guard {rest.strip()}: no command {command!r}")
            continue
        for option in OPTION.findall(" ".join(words[1:])):
            if option not in options[command]:
                found.append(f"{where}: stream-guard {rest.strip()}: {command} has no option {option}")
    return found


@pytest.fixture(scope="module")
def real_options() -> dict[str, set[str]]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        return {command: {o for action in parser_of(command, monkeypatch)._actions for o in action.option_strings}
                for command in COMMANDS}


def doc_commands() -> list[tuple[str, str, str]]:
    return [(f"{path.relative_to(REPO)}", program, rest)
            for path in DOCS for text in shown_commands(path) for program, rest in invocations(text)]


def test_every_command_the_docs_show_exists(real_options: dict[str, set[str]]) -> None:
    commands = doc_commands()
    shown = {rest.split()[0] for _, program, rest in commands if program == "stream-guard" and rest.split()}
    # The extraction finds the commands (so this cannot pass by finding none): fenced, inline, piped, via kubectl.
    assert {"check", "backtest", "calibrate", "serve", "worker", "tail", "replay-dlq", "alerts"} <= shown
    assert any(p == "make" and r.split() == ["test"] for _, p, r in commands)
    found = problems(commands, real_options, make_targets())
    assert not found, "\n".join(found)


def test_a_wrong_option_command_or_target_is_found(real_options: dict[str, set[str]]) -> None:
    text = ("cat a.jsonl | .venv/bin/stream-guard check - --ner spacy --jobz 2 > out.jsonl && make tests\n"
            "kubectl exec pod -- stream-guard tial verdicts\n"
            "stream-guard worker --broker HOST:PORT | --embedded [--web-port N | --no-web]\n"
            "stream-guard tail verdicts --format pretty | jq --raw-output .id\n")
    commands = [("doc", program, rest) for line in text.splitlines() for program, rest in invocations(line)]
    found = problems(commands, real_options, make_targets())
    assert [f.rsplit(": ", 1)[1] for f in found] == [
        "check has no option --jobz", "no target 'tests'", "no command 'tial'", "worker has no option --no-web"]
