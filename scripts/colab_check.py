"""Run every chapter where readers run it: `mha` installed alone from its wheel, outside the checkout.

For each profile this script builds (or reuses) a clean virtual environment holding only the
package's wheel with its ``[book]`` extra, a kernel and what Colab ships, copies the chapters to a
folder outside the repository, and executes every notebook there with nbclient. Any error cell
fails the run. Profiles:

- ``lowest``: Colab-like: ipywidgets 7.7.1 (what Colab has long shipped), IPython 7.34 and
  ipykernel 6.17 (Colab's), and the lowest versions the package allows: torch at the floor of
  ``dependencies`` (the newest patch release of that minor version, PyPI's build: with its CUDA
  libraries, about 3 GB, downloaded once into the cache) and the ``[book]`` extra's floors, read
  from pyproject.toml, so the floors are exactly what this run tested;
- ``newest``: the newest release of everything the extra allows (ipywidgets 8). When every
  package in it is at the version of the environment running this script (the book's .venv,
  requirements.txt's pins, where ``make notebooks`` runs every chapter under nbval), it is not
  run again unless ``--always`` is given; when a newer release appears, it runs.

No book toolchain (jupyter-book, myst-nb, sphinx) is installed: a chapter that imports one fails.
In the newest profile torch is the CPU wheel pinned in requirements.txt (taken from the local
wheel cache, never a multi-GB CUDA build). Environments are cached in ``~/.cache/mha-book/colab-check/``, keyed by
their inputs.

    python scripts/colab_check.py                 # both profiles
    python scripts/colab_check.py --profile lowest --jobs 2
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "_build" / "colab-check"
# the environments are kept between runs (and between clones) in the user's cache; the newest
# profile's is rebuilt when older than a week, so "newest" stays true
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mha-book" / "colab-check"
MAX_AGE_DAYS = 7

# What Colab ships besides the [book] extra, for the Colab-like profile.
COLAB_PINS = ["ipywidgets==7.7.1", "ipython==7.34.0", "ipykernel==6.17.1"]
# What runs the notebooks (not imported by any chapter).
RUNNER = ["nbclient", "nbformat", "ipykernel"]

EXECUTE = r'''
import sys, time, nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

path, timeout = sys.argv[1], int(sys.argv[2])
nb = nbformat.read(path, as_version=4)
start = time.perf_counter()
client = NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=False,
                        resources={"metadata": {"path": str(__import__("pathlib").Path(path).parent)}})
try:
    client.execute()
except CellExecutionError as error:
    print(str(error)[-4000:])
    sys.exit(1)
# an exception that IPython caught and showed (e.g. in a display formatter) leaves an error
# output while the cell itself "succeeds": that is a failure for a reader too
for index, cell in enumerate(nb.cells):
    if "raises-exception" in cell.get("metadata", {}).get("tags", []):
        continue
    for output in cell.get("outputs", []):
        shown = output.get("output_type") == "error" or (
            output.get("name") == "stderr" and "Traceback" in output.get("text", ""))
        if shown:
            text = output.get("text") or "\n".join(output.get("traceback", []))
            print(f"cell {index} shows an error:\n{text[-3000:]}")
            sys.exit(1)
print(f"{time.perf_counter() - start:.1f}")
'''


def book_floors():
    """The [book] extra's requirements, from pyproject.toml, as 'name>=floor' strings."""
    text = (ROOT / "pyproject.toml").read_text()
    match = re.search(r"^book\s*=\s*\[(.*?)\]", text, re.MULTILINE | re.DOTALL)
    if not match:
        sys.exit("pyproject.toml has no [project.optional-dependencies] book = [...]")
    return re.findall(r'"([^"]+)"', match.group(1))


def torch_pin():
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if line.startswith("torch=="):
            return line.strip()
    sys.exit("requirements.txt pins no torch==")


def torch_floor():
    """'torch~=X.Y.0' for the package's ``torch>=X.Y`` (the newest patch of the floor)."""
    text = (ROOT / "pyproject.toml").read_text()
    match = re.search(r'^dependencies\s*=\s*\["torch>=(\d+)\.(\d+)"\]', text, re.MULTILINE)
    if not match:
        sys.exit('pyproject.toml has no dependencies = ["torch>=X.Y"]')
    return f"torch~={match.group(1)}.{match.group(2)}.0"


def profile_torch(profile):
    return torch_floor() if profile == "lowest" else torch_pin()


def profile_requirements(profile):
    """(requirements, constraints) for a profile; torch at the floor (lowest) or the pin."""
    floors = book_floors()
    constraints = [profile_torch(profile)]
    if profile == "lowest":
        pinned = {re.split(r"[=<>!]", p)[0] for p in COLAB_PINS}
        lowest = [f.replace(">=", "==") for f in floors]
        constraints += [p for p in lowest if re.split(r"[=<>!]", p)[0] not in pinned]
        constraints += COLAB_PINS
        return RUNNER + COLAB_PINS, constraints
    return RUNNER, constraints


def run(cmd, **kwargs):
    print("+", " ".join(str(c) for c in cmd), flush=True)
    subprocess.run(cmd, check=True, **kwargs)


def build_wheel():
    dist = WORK / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(dist), str(ROOT)],
        cwd=tempfile.gettempdir())
    (wheel,) = dist.glob("mha-*.whl")
    return wheel


def make_env(profile, wheel):
    """A venv with torch, the wheel + [book] and the profile's pins; cached by its inputs."""
    requirements, constraints = profile_requirements(profile)
    key = hashlib.sha256(json.dumps([profile_torch(profile), requirements, constraints, book_floors(),
                                     sys.version]).encode()).hexdigest()[:12]
    env = CACHE / f"env-{profile}-{key}"
    python = env / "bin" / "python"
    ready = env / ".ready"
    if ready.exists() and profile == "newest":
        if time.time() - ready.stat().st_mtime > MAX_AGE_DAYS * 86400:
            ready.unlink()
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
           "-c", str(env / "constraints.txt")]
    if not ready.exists():
        shutil.rmtree(env, ignore_errors=True)
        for old in CACHE.glob(f"env-{profile}-*"):
            shutil.rmtree(old, ignore_errors=True)
        run([sys.executable, "-m", "venv", str(env)])
        (env / "constraints.txt").write_text("\n".join(constraints) + "\n")
        run(pip + [profile_torch(profile)])
        run(pip + requirements)
        ready.touch()
    # the package itself: always the freshly built wheel, then whatever its [book] extra still
    # needs (a fresh environment gets the newest versions the constraints allow)
    run(pip + ["--force-reinstall", "--no-deps", str(wheel)])
    run(pip + [f"{wheel}[book]"])
    return python


def describe(python):
    code = ("import importlib.metadata as m, mha; print('mha from', mha.__file__); "
            "print(', '.join(f'{p} {m.version(p)}' for p in ('torch', 'numpy', 'matplotlib', "
            "'seaborn', 'ipywidgets', 'anywidget', 'tqdm', 'ipykernel', "
            "'ipython')))")
    out = subprocess.run([str(python), "-c", code], check=True, capture_output=True, text=True,
                         cwd=tempfile.gettempdir()).stdout
    print(out, end="")
    if str(ROOT / "mha") in out.splitlines()[0] or "site-packages" not in out.splitlines()[0]:
        sys.exit(f"mha was imported from the checkout ({ROOT}), not from the wheel")
    for book_only in ("myst_nb", "jupyter_book", "sphinx"):
        found = subprocess.run([str(python), "-c", f"import {book_only}"], capture_output=True,
                               cwd=tempfile.gettempdir()).returncode == 0
        if found:
            sys.exit(f"the clean environment has {book_only}: the check would prove nothing")


# packaging tools and the package itself: not what a chapter runs on
NOT_COMPARED = {"mha", "pip", "setuptools", "wheel"}
VERSIONS = ("import importlib.metadata as m, json; print(json.dumps({d.metadata['Name'].lower()"
            ".replace('_', '-'): d.version for d in m.distributions()}))")


def versions(python):
    """{distribution: version} installed for ``python``."""
    out = subprocess.run([str(python), "-c", VERSIONS], check=True, capture_output=True,
                         text=True, cwd=tempfile.gettempdir()).stdout
    return {k: v for k, v in json.loads(out).items() if k not in NOT_COMPARED}


def differs_from_here(python):
    """The distributions of ``python``'s environment whose version is not this interpreter's
    (the book's .venv, from requirements.txt's pins): {name: (there, here)}."""
    here = versions(sys.executable)
    return {k: (v, here.get(k)) for k, v in versions(python).items() if here.get(k) != v}


def execute_all(python, notebooks, jobs, timeout):
    """Copy the chapters outside the checkout and execute each; returns the failures."""
    folder = Path(tempfile.mkdtemp(prefix="mha-colab-check-"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{python.parent}{os.pathsep}{env.get('PATH', '')}"
    env["MPLBACKEND"] = "Agg"
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"  # quiet the debugger's note on frozen modules

    def one(nb):
        copy = folder / nb.name
        shutil.copy(nb, copy)
        proc = subprocess.run([str(python), "-c", EXECUTE, str(copy), str(timeout)],
                              capture_output=True, text=True, cwd=folder, env=env)
        out = proc.stdout.strip() if proc.returncode == 0 else (proc.stdout + proc.stderr).strip()
        return nb.name, proc.returncode, out

    failures = []
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for name, code, out in pool.map(one, notebooks):
            if code == 0:
                print(f"  ok    {name} ({out.splitlines()[-1]} s)", flush=True)
            else:
                print(f"  FAIL  {name}\n{out}", flush=True)
                failures.append(name)
    shutil.rmtree(folder, ignore_errors=True)
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", choices=["lowest", "newest", "all"], default="all")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=int, default=300, help="seconds per cell")
    parser.add_argument("--always", action="store_true",
                        help="run the newest profile even where it holds exactly the versions "
                             "of the environment running this script")
    parser.add_argument("notebooks", nargs="*", type=Path,
                        help="notebooks to run (default: every chapter)")
    args = parser.parse_args()
    notebooks = args.notebooks or sorted((ROOT / "chapters").glob("*.ipynb"))
    profiles = ["lowest", "newest"] if args.profile == "all" else [args.profile]
    WORK.mkdir(parents=True, exist_ok=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    start = time.time()
    wheel = build_wheel()
    failed, ran = {}, len(profiles)
    for profile in profiles:
        print(f"== colab-check: profile {profile}", flush=True)
        python = make_env(profile, wheel)
        describe(python)
        if profile == "newest" and not args.always and "lowest" in profiles:
            different = differs_from_here(python)
            if not different:  # the same versions as `make notebooks` (nbval) runs
                print(f"  not run: every package of this profile is at the version of "
                      f"{Path(sys.executable).parent.parent.name} (requirements.txt's pins), "
                      f"where `make notebooks` runs every chapter under nbval, and the lowest "
                      f"profile ran them from the wheel outside the checkout (--always runs "
                      f"it)", flush=True)
                ran -= 1
                continue
            print(f"  newer than requirements.txt's pins: {different}", flush=True)
        failures = execute_all(python, notebooks, args.jobs, args.timeout)
        if failures:
            failed[profile] = failures
    print(f"== colab-check finished in {time.time() - start:.0f} s")
    if failed:
        sys.exit(f"colab-check failed: {failed}")
    print(f"colab-check: {len(notebooks)} notebooks ran clean in {ran} environment(s)")


if __name__ == "__main__":
    main()
