"""Every Python snippet in README.md runs alone as pasted: each as `demo.py` in an empty working
directory of its own, with nothing any other snippet defined; the printed graph of "Recording a
program" is the one the README shows. docs/train_step.py (the picture's script) leaves the
tracked picture alone unless it is named. Shell commands name files that exist and the
environment's own mpiexec, in the README and in the scripts' help.

The snippets run in children forked, one per snippet, from one fresh interpreter that has done
`import fusetorch` and nothing else (each snippet still runs its own imports, and a name it
does not import is a NameError): the same as a fresh process each, without paying the import
(~1.3 s of CPU) a dozen times."""
import ast
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
SNIPPETS = re.findall(r"^```python\n(.*?)^```", README, flags=re.S | re.M)
PICTURE = str(ROOT / "docs" / "train_step.py")

# one child per job: fresh globals, its own directory, stdout and stderr to files there
RUNNER = r"""
import json, os, signal, sys, traceback
import fusetorch  # what every snippet imports first
for job in json.loads(sys.stdin.read()):
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.chdir(job["dir"])
            for fd, name in ((1, "stdout"), (2, "stderr")):
                os.dup2(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), fd)
            signal.alarm(300)
            sys.argv = ["demo.py"]
            exec(compile(job["code"], "demo.py", "exec"), {"__name__": "__main__"})
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    os.waitpid(pid, 0)
"""

PICTURE_JOB = f"""
import runpy, sys
from fusetorch.utils import viz
sys.argv = [{PICTURE!r}, "named.dot"]
runpy.run_path({PICTURE!r}, run_name="__main__")
drawn = []
viz.render = lambda graph, path, **kw: drawn.append(path)
sys.argv = [{PICTURE!r}]
runpy.run_path({PICTURE!r}, run_name="__main__")
print("drawn", drawn)
"""


def _runnable(code: str) -> str:
    if shutil.which("dot") is None:  # Graphviz is a system package CI may lack: only the
        # drawing line is left out (fusetorch.utils.viz's tests cover its clear error)
        return "\n".join(line for line in code.splitlines() if "viz.render(" not in line)
    return code


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> list:
    """(directory, exit status) of each job: the snippets in order, then the picture's
    script, run from a directory holding a docs/train_step.svg it must not touch."""
    jobs = []
    for i, code in enumerate(SNIPPETS + [PICTURE_JOB]):
        d = tmp_path_factory.mktemp(f"snippet{i}")
        jobs.append({"dir": str(d), "code": _runnable(code) if i < len(SNIPPETS) else code})
    (Path(jobs[-1]["dir"]) / "docs").mkdir()
    (Path(jobs[-1]["dir"]) / "docs" / "train_step.svg").write_text("tracked")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-c", RUNNER], input=json.dumps(jobs), text=True,
                       capture_output=True, timeout=900, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    return [Path(j["dir"]) for j in jobs]


def _outcome(d: Path) -> tuple[str, str]:
    return (d / "stdout").read_text(), (d / "stderr").read_text()


def test_readme_has_snippets():
    assert len(SNIPPETS) >= 4


@pytest.mark.parametrize("index", range(len(SNIPPETS)),
                         ids=[f"{i}:{s.splitlines()[0][:40]}" for i, s in enumerate(SNIPPETS)])
def test_every_python_snippet_runs_alone_as_pasted(runs, index):
    out, err = _outcome(runs[index])
    assert "Traceback" not in err, err[-3000:]
    code = SNIPPETS[index]
    shown = [line[2:] for line in code.splitlines() if line.startswith(("# %", "# return"))]
    if shown:  # a printed graph written out below its print: the one printed now
        assert [line for line in out.splitlines() if line.startswith(("%", "return"))] == shown


def test_the_pictures_script_writes_where_it_is_told(runs):
    """Run from the repository root, docs/train_step.py used to overwrite the tracked
    docs/train_step.svg: it draws train_step.svg in the current directory unless a file is
    named (a .dot file needs no Graphviz)."""
    d = runs[-1]
    out, err = _outcome(d)
    assert "Traceback" not in err, err[-3000:]
    assert "(forward+backward)" in out and "(update)" in out
    assert (d / "named.dot").read_text().startswith("digraph")
    assert "drawn ['train_step.svg']" in out
    assert (d / "docs" / "train_step.svg").read_text() == "tracked"


def test_a_failing_snippet_is_seen(tmp_path):
    """The runner reports what a snippet that needs an earlier one's names does."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    job = [{"dir": str(tmp_path), "code": "x = torch.ones(2)\n"}]
    subprocess.run([sys.executable, "-c", RUNNER], input=json.dumps(job), text=True,
                   timeout=300, env=env, check=True)
    assert "NameError: name 'torch' is not defined" in (tmp_path / "stderr").read_text()


def _bare_mpiexec(text: str):
    """A command line starting `mpiexec` itself: a fresh clone has none on PATH (the
    `distributed` extra puts it in .venv/bin)."""
    return re.search(r"(^|&& |\s)mpiexec\b", text, flags=re.M)


def test_shell_commands_name_files_that_exist():
    for block in re.findall(r"^```sh\n(.*?)^```", README, flags=re.S | re.M):
        for path in re.findall(r"\b((?:examples|benchmarks)/[\w/.-]+\.py)", block):
            assert (ROOT / path).is_file(), path
        assert not _bare_mpiexec(block), block


@pytest.mark.parametrize("folder", ["examples", "benchmarks"])
def test_scripts_help_shows_the_environments_mpiexec(folder):
    """The docstring is each script's --help (argparse's description)."""
    for path in sorted((ROOT / folder).glob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        for line in doc.splitlines():  # a command line of the help: what a user pastes
            assert not line.strip().startswith("mpiexec"), f"{path.name}: {line}"


def test_the_cache_the_readme_names_is_the_one_used(monkeypatch, tmp_path):
    from fusetorch.runtime import cbuild
    monkeypatch.delenv("FUSETORCH_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cbuild._configured_dir() == tmp_path / ".cache" / "fusetorch"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cbuild._configured_dir() == tmp_path / "xdg" / "fusetorch"
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(tmp_path / "moved"))
    assert cbuild._configured_dir() == tmp_path / "moved"
    section = README.split("### The kernel cache", 1)[1].split("\n## ", 1)[0]
    for words in ("`~/.cache/fusetorch`", "`$XDG_CACHE_HOME/fusetorch`", "FUSETORCH_CACHE_DIR=",
                  "rm -rf ~/.cache/fusetorch", "cbuild.cache_dir()"):
        assert words in section, words
