"""The course's JupyterHub image (deploy/jupyterhub), checked without Docker.

Building the image needs a Docker daemon and Docker Hub, which `make
course-test` has not. What it has is the environment the image describes,
built by the Makefile from the same files (requirements-nbgrader.txt and
requirements-hub.txt, then the mha package, into .venv-nbgrader), in which
test_hub_course.py runs its hub with the image's Jupyter configuration
(deploy/jupyterhub/etc) and the Zero to JupyterHub values' hook
(deploy/jupyterhub/config.yaml). These tests check that the two are the same
environment: that the Dockerfile installs exactly those files and that
configuration, that the venv holds every pin of the files (so the hub ran on
what the image installs) with no broken requirement, that everything the
chapters, the course scripts and the package's [book] extra need is in it,
and that the image's user makes nbgrader tell students apart. Not checked:
the base image (python:3.11-slim-bookworm), PyTorch's CPU wheel (the venv may
hold PyPI's build of the same version), the build itself, Kubernetes.
"""

import ast
import importlib.metadata
import importlib.util
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib
import yaml
from nbgrader import utils
from traitlets.config import Config

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import hub_course  # noqa: E402

DEPLOY = ROOT / "deploy" / "jupyterhub"
REQUIREMENTS = ["requirements-nbgrader.txt", "requirements-hub.txt"]


def instructions(dockerfile):
    """[(INSTRUCTION, arguments)] of a Dockerfile, continuations joined."""
    text = re.sub(r"\\\n", " ", dockerfile.read_text("utf-8"))
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            found.append((word.upper(), " ".join(rest.split())))
    return found


def pins(name):
    """{distribution: version} of a requirements file's `name==version`."""
    found = {}
    for line in (ROOT / name).read_text("utf-8").splitlines():
        line = line.split("#")[0].strip()
        if line:
            dist, _, version = line.partition("==")
            assert version, f"{name}: {line} is not pinned"
            found[dist.strip()] = version.strip()
    return found


@pytest.fixture(scope="module")
def docker():
    return instructions(DEPLOY / "Dockerfile")


@pytest.fixture(scope="module")
def values():
    return yaml.safe_load((DEPLOY / "config.yaml").read_text("utf-8"))


def test_the_image_installs_the_files_the_course_test_installs(docker):
    (base,) = [args for word, args in docker if word == "FROM"]
    image, _, tag = base.partition(":")
    assert image == "python" and re.match(r"3\.(1[1-9])-", tag), base
    copies = [shlex.split(args) for word, args in docker if word == "COPY"]
    for *sources, _ in copies:  # everything copied is in the repository
        for source in sources:
            assert (ROOT / source).exists(), source
    assert [*REQUIREMENTS, "/tmp/mha/"] in copies
    run = " && ".join(args for word, args in docker if word == "RUN")
    commands = [c.strip() for c in run.split("&&")]
    torch = pins("requirements-nbgrader.txt")["torch"]
    assert any(c.startswith("pip install") and "whl/cpu" in c
               and "grep '^torch==' /tmp/mha/requirements-nbgrader.txt" in c
               for c in commands), "PyTorch's CPU build at the file's pin"
    assert torch
    assert ("pip install --no-cache-dir -r /tmp/mha/requirements-nbgrader.txt"
            " -r /tmp/mha/requirements-hub.txt") in commands
    assert "pip install --no-cache-dir --no-deps /opt/mha-book" in commands
    for part in ("pyproject.toml", "mha", "mha_book", "chapters", "scripts"):
        assert any(part in sources for *sources, _ in copies), part


def test_the_image_has_the_configuration_the_hub_ran_with(docker, values):
    env = dict(args.split("=", 1) for word, args in docker if word == "ENV")
    copies = [shlex.split(args) for word, args in docker if word == "COPY"]
    assert ["deploy/jupyterhub/etc/", "/etc/jupyter/mha-course/"] in copies
    assert env["JUPYTER_CONFIG_PATH"] == "/etc/jupyter/mha-course"
    assert hub_course.IMAGE_CONFIG == DEPLOY / "etc"
    hook = values["hub"]["extraConfig"]["mha-course"]
    assert '"MHA_COURSE_CONFIG", "/etc/jupyter/mha-course"' in hook
    assert (DEPLOY / "etc" / "instructor" /
            "jupyter_server_config.json").is_file()
    # the user every server runs as on Zero to JupyterHub
    assert ("RUN", "useradd --create-home --uid 1000 --gid 100 --shell "
                   "/bin/bash jovyan") in docker
    assert ("USER", "1000") in docker
    assert (values["singleuser"]["uid"], values["singleuser"]["fsGid"]) == \
        (1000, 100)
    assert ("CMD", '["jupyterhub-singleuser"]') in docker


def test_the_exchange_is_where_every_server_looks_with_its_mode(
        values, monkeypatch):
    monkeypatch.delenv("NBGRADER_EXCHANGE", raising=False)
    config = Config()
    exec((DEPLOY / "etc" / "nbgrader_config.py").read_text("utf-8"),
         {"get_config": lambda: config})
    root = config.Exchange.root
    single = values["singleuser"]
    mounts = {m["name"]: m["mountPath"]
              for m in single["storage"]["extraVolumeMounts"]}
    assert mounts["nbgrader-exchange"] == root == "/srv/nbgrader/exchange"
    (init,) = single["initContainers"]
    assert init["command"] == ["chmod", "1777", root]
    assert int(init["command"][1], 8) == hub_course.EXCHANGE_MODE
    assert init["volumeMounts"][0]["mountPath"] == root


def test_the_course_test_ran_on_every_pin_of_the_image():
    wrong = {}
    for name in REQUIREMENTS:
        for dist, version in pins(name).items():
            installed = importlib.metadata.version(dist)
            if installed.split("+")[0] != version:  # 2.13.0+cpu is 2.13.0
                wrong[dist] = (version, installed)
    assert not wrong, f"the venv differs from the pins (make course-test " \
                      f"reinstalls them): {wrong}"
    check = subprocess.run([sys.executable, "-m", "pip", "check"],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def imports(text):
    """Top-level modules ``text`` (Python, or a notebook cell) imports."""
    lines = [re.sub(r"^(\s*)[%!].*", r"\1pass", line)
             for line in text.splitlines()]  # IPython magics and shell
    tree = ast.parse("\n".join(lines))
    optional = set()  # imports in ``try: ... except ImportError`` may fail
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
                isinstance(h.type, ast.Name) and h.type.id in (
                    "ImportError", "ModuleNotFoundError")
                for h in node.handlers):
            optional |= {id(n) for part in node.body
                         for n in ast.walk(part)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in optional:
            continue
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level:
            found.add(node.module.split(".")[0])
    return found


def test_an_import_guarded_by_except_import_error_is_optional():
    cell = ("import torch\ntry:\n    from transformers import BertModel\n"
            "except ImportError:\n    BertModel = None\n"
            "try:\n    import seaborn\nexcept ValueError:\n    pass\n")
    assert imports(cell) == {"torch", "seaborn"}


def test_everything_the_chapters_and_the_course_import_is_in_it():
    needed = {}
    for path in sorted((ROOT / "chapters").glob("*.ipynb")):
        for cell in json.loads(path.read_text("utf-8"))["cells"]:
            if cell["cell_type"] == "code":
                for module in imports("".join(cell["source"])):
                    needed.setdefault(module, path.name)
    scripts = [ROOT / "scripts" / "assignments.py",
               ROOT / "scripts" / "student_notebooks.py",
               *sorted((ROOT / "scripts" / "course").glob("*.py"))]
    local = {p.stem for p in scripts}
    for path in scripts:
        for module in imports(path.read_text("utf-8")) - local:
            needed.setdefault(module, path.name)
    missing = {m: where for m, where in needed.items()
               if m not in sys.stdlib_module_names
               and importlib.util.find_spec(m) is None}
    assert not missing, missing
    assert {"torch", "mha", "matplotlib"} <= set(needed)
    # and what the package's [book] extra asks for (the widgets, tqdm, ...)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    for requirement in project["project"]["optional-dependencies"]["book"]:
        dist = re.match(r"[A-Za-z0-9_.-]+", requirement)[0]
        assert importlib.metadata.version(dist), dist


def test_nbgrader_tells_students_apart_only_as_jovyan(monkeypatch):
    # on Zero to JupyterHub every server runs as jovyan: nbgrader then names
    # a submission by the hub's username; as any other Unix user, by that
    # user (why tests/course_hub's one-user hub sets student_id instead)
    monkeypatch.setenv("JUPYTERHUB_USER", "alice")
    monkeypatch.setattr(utils, "get_osusername", lambda: "jovyan")
    assert utils.get_username() == "alice"
    monkeypatch.setattr(utils, "get_osusername", lambda: "someone")
    assert utils.get_username() == "someone"


def test_the_guide_says_what_the_test_runs(docker):
    guide = (ROOT / "appendix" / "teachers.md").read_text("utf-8")
    section = guide[guide.index("## Running the course on JupyterHub"):]
    hub = pins("requirements-hub.txt")["jupyterhub"]
    assert f"JupyterHub {hub} (`requirements-hub.txt`" in section
    assert f"JupyterHub {hub.split('.')[0]}" in section  # the chart's
    package = json.loads((ROOT / "tests" / "course_hub" /
                          "package.json").read_text("utf-8"))
    proxy = package["dependencies"]["configurable-http-proxy"]
    lock = json.loads((ROOT / "tests" / "course_hub" /
                       "package-lock.json").read_text("utf-8"))
    assert lock["packages"]["node_modules/configurable-http-proxy"][
        "version"] == proxy
    assert f"configurable-http-proxy {proxy} (npm" in section
    (base,) = [args for word, args in docker if word == "FROM"]
    assert f"`{base}`" in section
    mode = f"{hub_course.EXCHANGE_MODE:o}"
    assert f"| `/srv/nbgrader/exchange` | `{mode}`" in section
    assert f"install -d -m {mode} /srv/nbgrader/exchange" in section
    for name, mode in hub_course.COURSE_MODES.items():
        folder = f"{hub_course.COURSE_ID}/{name}/".replace("//", "/")
        assert f"| `{folder}` | `{mode:o}`" in section, folder
    # the teacher's configuration, as the test hub writes it
    root = 'c.CourseDirectory.root = os.path.expanduser("~/course")'
    assert root in section and root in hub_course.TEACHER_NBGRADER
