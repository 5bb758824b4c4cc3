"""Every shell, Python and JSON snippet in README.md runs, in order, in one temporary folder.

A snippet runs as a reader would paste it: shell through ``bash -euo pipefail`` with the
workbench's ``rwb`` first on PATH, Python with the workbench's interpreter, a run configuration
(JSON with a ``protocol``) through the same parser ``rwb run`` uses. Later snippets may use what
earlier ones made (``study.rwb``). HTML comments just above a snippet adjust the test:

- ``<!-- readme-test: skip: REASON -->``: not run, reported as skipped with REASON;
- ``<!-- readme-test: loopback -->``: a loopback OpenAI-compatible server stands in for the local
  model server at ``http://127.0.0.1:8000/v1``;
- ``<!-- readme-test: corpus -->``: ``curl`` lines copy the file from ``../shared/corpus`` instead
  of downloading it (skipped where the corpus is absent);
- ``<!-- readme-test: needs pandas -->``: skipped where pandas is not installed.

Fenced blocks with no language (``make run``) are not snippets.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import CORPUS, REPO_ROOT
from tests.support.fake_llm_server import FakeLLMServer, Reply

README = REPO_ROOT / "README.md"
LOCAL_SERVER = "http://127.0.0.1:8000/v1"
_FENCE = re.compile(r"^```(\w*)\s*$")
_MARK = re.compile(r"^<!--\s*readme-test:\s*(.*?)\s*-->$")


@dataclass(frozen=True)
class Snippet:
    line: int
    lang: str
    code: str
    marks: tuple[str, ...]

    def __str__(self) -> str:
        return f"README.md:{self.line}-{self.lang}"


def snippets(text: str) -> list[Snippet]:
    out, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        fence = _FENCE.match(lines[i].strip())
        if fence is None:
            i += 1
            continue
        marks, j = [], i - 1
        while j >= 0 and _MARK.match(lines[j].strip()):
            marks.insert(0, _MARK.match(lines[j].strip()).group(1))
            j -= 1
        end = next(k for k in range(i + 1, len(lines)) if lines[k].strip() == "```")
        body = [ln[len(lines[i]) - len(lines[i].lstrip()):] for ln in lines[i + 1:end]]  # undo list indent
        if fence.group(1) in ("sh", "python", "json"):
            out.append(Snippet(i + 1, fence.group(1), "\n".join(body) + "\n", tuple(marks)))
        i = end + 1
    return out


SNIPPETS = snippets(README.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """A reader's folder: the samples beside them, a home of its own, no keys."""
    root = tmp_path_factory.mktemp("readme")
    (root / "sample_runs").symlink_to(REPO_ROOT / "sample_runs")
    bin_dir = Path(sys.executable).parent
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(root / "home"), "LANG": "C.UTF-8",
           "XDG_DATA_HOME": str(root / "home" / "data"), "XDG_CONFIG_HOME": str(root / "home" / "config"),
           "LITELLM_LOCAL_MODEL_COST_MAP": "True", "QT_QPA_PLATFORM": "offscreen", "RWB_DEMO_PATH": str(root / "demo.rwb")}
    return root, env


def test_the_readme_has_snippets_of_every_kind():
    kinds = {s.lang for s in SNIPPETS}
    assert kinds == {"sh", "python", "json"}, kinds
    assert len(SNIPPETS) >= 12


@pytest.mark.parametrize("snippet", SNIPPETS, ids=str)
def test_readme_snippet_runs(snippet: Snippet, workspace):
    root, env = workspace
    code = snippet.code
    for mark in snippet.marks:
        if mark.startswith("skip:"):
            pytest.skip(mark[len("skip:"):].strip())
        if mark == "needs pandas" and importlib.util.find_spec("pandas") is None:
            pytest.skip("pandas is not installed (it is not a dependency of the workbench)")
        if mark == "corpus":
            if not CORPUS.is_dir():
                pytest.skip(f"the ARM corpus is absent: expected it at {CORPUS}")
            code = "\n".join(_from_corpus(line) for line in code.splitlines()) + "\n"
    if "loopback" in snippet.marks:
        # A model that writes an artifact, and votes on the others in its own words (a vote that
        # only repeats the artifact it judges is a quote, never the voter's: SPEC §11).
        def reply(request) -> str:
            if "Answer in one or two short paragraphs" in json.dumps(request.messages):
                return "Trial closures elsewhere cut traffic without hurting trade."
            return '{"vote": "YES", "reason": "It weighs traffic against trade."}'

        with FakeLLMServer(default=Reply(text=reply)) as server:
            _run(snippet, code.replace(LOCAL_SERVER, server.base_url), root, env)
            assert server.chat_requests, "the snippet never reached the stand-in server"
        return
    _run(snippet, code, root, env)


def _from_corpus(line: str) -> str:
    if not line.startswith("curl "):
        return line
    name = line.split()[-1].rsplit("/", 1)[-1]
    found = next(CORPUS.rglob(name), None)
    assert found is not None, f"{name} is not in the corpus"
    return f"cp {shlex.quote(str(found))} ."


def _run(snippet: Snippet, code: str, root: Path, env: dict) -> None:
    if snippet.lang == "json":
        from workbench.core.runs.config import parse_run_config

        data = json.loads(code)
        if "model" in data:  # a provider entry alone: checked inside the smallest run around it
            data = {"protocol": "rcp", "query": "q", "providers": {"p": data}, "clusters": [
                {"name": "a", "agents": [{"id": "a1", "provider": "p"}]},
                {"name": "b", "agents": [{"id": "b1", "provider": "p"}]}]}
        if "protocol" in data:
            parse_run_config(data)  # raises InputError naming the field
        return
    argv = ["bash", "-euo", "pipefail", "-c", code] if snippet.lang == "sh" else [sys.executable, "-c", code]
    out = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, f"{snippet} exited {out.returncode}\n--- stdout\n{out.stdout}\n--- stderr\n{out.stderr}"
    if "rwb classify rcp" in code:  # the output the README's prose promises
        assert "w1 positive_consensus accelerator" in out.stdout and "w2 negative_polar None" in out.stdout
