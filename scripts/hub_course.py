"""The book's nbgrader course on a JupyterHub on this machine: a teacher and
students, each with a Jupyter server of their own, and nbgrader's exchange.

Usage: python scripts/hub_course.py DIR [CHAPTER ...]  (default: 00_preface)

Starts JupyterHub on 127.0.0.1 (a free port; the address is printed) until
Ctrl-C, everything under DIR: the hub's files (DIR/hub), the exchange
(DIR/exchange, mode 1777) and one home per user (DIR/home/<user>). The
teacher `teacher` (group instructors) finds the course (scripts/assignments.py,
the chapters given) in ~/course and the formgrader in the Nbgrader menu;
students `alice`, `bob`, `carol` and `dave` have the Assignments tab.
Everyone logs in with the password printed. Run it with the nbgrader venv's
Python after `make course-test` has installed JupyterHub and its proxy
(`.venv-nbgrader/bin/python scripts/hub_course.py /tmp/hub`).

tests/course_hub/test_hub_course.py (`make course-test`) runs a whole
assignment through such a hub; appendix/teachers.md ("Running the course on
JupyterHub") says what a department sets up instead.

As on a department's hub: JupyterHub and its proxy (configurable-http-proxy),
one Jupyter server per user started by the hub, nbgrader's server extensions
in them, nbgrader's default exchange on a shared folder, the student image's
Jupyter configuration (deploy/jupyterhub/etc) given to each server by the
Zero to JupyterHub values' hook (deploy/jupyterhub/config.yaml, read here),
with the formgrader for instructors only. Not as on a department's hub: the
logins (one shared password, JupyterHub's SharedPasswordAuthenticator) and
the spawner. SimpleLocalProcessSpawner runs every user's server as the Unix
user who runs this script, each in its own home, so nbgrader cannot tell the
students apart by their Unix user: each student's ~/.jupyter says who they
are (CourseDirectory.student_id from JUPYTERHUB_USER; on Zero to JupyterHub
every user is `jovyan`, and nbgrader reads JUPYTERHUB_USER itself). The
exchange's folders get nbgrader's modes, which nothing enforces between
students here (they are one Unix user).
"""

import argparse
import asyncio
import json
import os
import re
import secrets
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent  # the nbgrader venv's
PROXY = ROOT / "tests" / "course_hub" / "node_modules" / ".bin" / \
    "configurable-http-proxy"
COURSE_ID = "mha-book"
TEACHER = "teacher"
STUDENTS = ("alice", "bob", "carol", "dave")
# the exchange's root: everyone writes there (nbgrader's own `ugo+rw`), with
# the sticky bit, as /tmp, so that no student can rename or delete the
# teacher's course folder in it (nbgrader keeps the bit: it checks 0o777 only)
EXCHANGE_MODE = 0o1777
# what nbgrader itself gives the course's folders in the exchange (release
# and release_feedback; nbgrader/exchange/default): the course and outbound
# readable by all, inbound writable but not listable by students (set-group-
# id), feedback only reachable by a file name that is a hash of the student's
# own submission
COURSE_MODES = {"": 0o755, "outbound": 0o755, "inbound": 0o2733,
                "feedback": 0o711}
MARK = "MHA_COURSE_HUB"  # in the environment of every process the hub starts
SERVER_ROLE_SCOPES = ["admin:users", "admin:servers", "tokens"]


def free_ports(n):
    """``n`` different ports free on 127.0.0.1 now."""
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


HUB_CONFIG = '''\
# JupyterHub's configuration, written by scripts/hub_course.py
import os

import yaml

c = get_config()  # noqa: F821 (JupyterHub defines it)
c.JupyterHub.bind_url = "http://127.0.0.1:{port}"
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{api_port}"
c.ConfigurableHTTPProxy.command = [{proxy!r}]
c.ConfigurableHTTPProxy.pid_file = {hub!r} + "/proxy.pid"
c.JupyterHub.db_url = "sqlite:///" + {hub!r} + "/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = {hub!r} + "/cookie_secret"
c.JupyterHub.pid_file = {hub!r} + "/hub.pid"

# a test's logins: one shared password (a department uses its own logins)
c.JupyterHub.authenticator_class = "shared-password"
c.SharedPasswordAuthenticator.user_password = {password!r}
c.Authenticator.allowed_users = {users!r}

# every user's server as this Unix user, in its own home (a test's spawner)
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = {home!r} + "/{{username}}"
c.Spawner.cmd = [{singleuser!r}]
c.Spawner.default_url = "/lab"
# a terminal's shell is no login shell, so that it keeps the venv's PATH (a
# Debian /etc/profile resets root's)
c.Spawner.args = ["--ServerApp.terminado_settings="
                  "{{'shell_command': ['/bin/bash']}}"]
if os.geteuid() == 0:  # a CI container: Jupyter refuses root without this
    c.Spawner.args.append("--allow-root")
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
c.Spawner.environment = {{
    "PATH": {bin!r} + os.pathsep + os.environ["PATH"],
    "NBGRADER_EXCHANGE": {exchange!r},
    {mark!r}: {root!r},
}}

# as on Zero to JupyterHub (deploy/jupyterhub/config.yaml, read here): the
# instructors group, and the hook that gives every server the course's
# Jupyter configuration (deploy/jupyterhub/etc, MHA_COURSE_CONFIG), with the
# formgrader for instructors only
with open({values!r}, encoding="utf-8") as f:
    values = yaml.safe_load(f)
c.JupyterHub.load_groups = values["hub"]["config"]["JupyterHub"][
    "load_groups"]
exec(values["hub"]["extraConfig"]["mha-course"])

# the course's own admin (this script): start servers, make users' tokens
c.JupyterHub.services = [{{"name": "course-admin", "api_token": {token!r}}}]
c.JupyterHub.load_roles = [{{
    "name": "course-admin", "scopes": {scopes!r},
    "services": ["course-admin"],
}}]
'''

# the image's Jupyter configuration (deploy/jupyterhub/Dockerfile copies it
# to /etc/jupyter/mha-course): the exchange (NBGRADER_EXCHANGE), no formgrader
# for students, instructor/ for instructors; and the Zero to JupyterHub values
# whose hook puts it on each server's JUPYTER_CONFIG_PATH
IMAGE_CONFIG = ROOT / "deploy" / "jupyterhub" / "etc"
VALUES = ROOT / "deploy" / "jupyterhub" / "config.yaml"

# as appendix/teachers.md has it (nbgrader then reads the course's own
# nbgrader_config.py too)
TEACHER_NBGRADER = '''\
# the teacher's ~/.jupyter/nbgrader_config.py: where the course is
import os

c = get_config()  # noqa: F821
c.CourseDirectory.root = os.path.expanduser("~/course")
'''

STUDENT_NBGRADER = '''\
# a student's ~/.jupyter/nbgrader_config.py, on this test hub only: every
# server here runs as one Unix user, so nbgrader is told who the student is
# (on Zero to JupyterHub every user is `jovyan`, and nbgrader then reads
# JUPYTERHUB_USER itself)
import os

c = get_config()  # noqa: F821
c.CourseDirectory.student_id = os.environ["JUPYTERHUB_USER"]
'''


def make_exchange(path):
    """The exchange's root, made on purpose with EXCHANGE_MODE."""
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, EXCHANGE_MODE)
    return path


def write_course(course, chapters):
    """The nbgrader course of ``chapters`` (scripts/assignments.py)."""
    paths = [str(ROOT / "chapters" / f"{c}.ipynb") for c in chapters]
    run = subprocess.run([sys.executable, str(ROOT / "scripts" /
                                              "assignments.py"),
                          str(course), *paths], text=True,
                         capture_output=True)
    if run.returncode:
        raise RuntimeError(run.stdout + run.stderr)


class Hub:
    """A JupyterHub under ``root``: ``with Hub(root) as hub:`` starts it
    and, at the end, stops it, its proxy and every user's server."""

    def __init__(self, root, chapters=("00_preface",), teacher=TEACHER,
                 students=STUDENTS):
        self.root = Path(root).resolve()
        self.teacher, self.students = teacher, tuple(students)
        self.users = (teacher, *self.students)
        self.chapters = chapters
        self.hub_dir = self.root / "hub"
        self.home = self.root / "home"
        self.exchange = self.root / "exchange"
        self.course = self.home / teacher / "course"
        self.password = secrets.token_urlsafe(12)
        self.token = secrets.token_hex(32)
        self.ports = free_ports(3)  # the proxy's, the hub's, the proxy API's
        self.port = self.ports[0]
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = None
        self.log = self.hub_dir / "hub.log"
        self.tokens = {}

    # --- set-up -----------------------------------------------------------
    def write(self):
        for path in (self.hub_dir, self.home):
            path.mkdir(parents=True, exist_ok=True)
        make_exchange(self.exchange)
        for user in self.users:
            dot = self.home / user / ".jupyter"
            dot.mkdir(parents=True, exist_ok=True)
            if user == self.teacher:
                text = TEACHER_NBGRADER
            else:
                text = STUDENT_NBGRADER
            (dot / "nbgrader_config.py").write_text(text, "utf-8")
        write_course(self.course, self.chapters)
        hub_port, api_port = self.ports[1:]
        config = HUB_CONFIG.format(
            port=self.port, hub_port=hub_port, api_port=api_port,
            proxy=str(PROXY), hub=str(self.hub_dir), password=self.password,
            users=set(self.users), home=str(self.home),
            singleuser=str(BIN / "jupyterhub-singleuser"), bin=str(BIN),
            values=str(VALUES),
            exchange=str(self.exchange), mark=MARK, root=str(self.root),
            token=self.token, scopes=SERVER_ROLE_SCOPES)
        (self.hub_dir / "jupyterhub_config.py").write_text(config, "utf-8")

    def env(self):
        """The hub's environment."""
        env = {**os.environ, MARK: str(self.root),
               "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
               "MHA_COURSE_CONFIG": str(IMAGE_CONFIG)}
        for key in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR",
                    "JUPYTER_RUNTIME_DIR", "JUPYTER_CONFIG_PATH",
                    "NBGRADER_EXCHANGE"):
            env.pop(key, None)
        return env

    def start(self, timeout=60):
        if not PROXY.exists():
            raise RuntimeError(f"no {PROXY}: run `make course-test` (npm)")
        self.write()
        env = self.env()
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(
                [str(BIN / "jupyterhub"), "-f",
                 str(self.hub_dir / "jupyterhub_config.py")],
                cwd=self.hub_dir, env=env, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"JupyterHub exited:\n{self.tail()}")
            try:
                if self.api("GET", "/users").ok:
                    return self
            except requests.ConnectionError:
                pass
            time.sleep(0.3)
        raise RuntimeError(f"JupyterHub did not answer:\n{self.tail()}")

    def tail(self, lines=40):
        text = self.log.read_text(errors="replace") if self.log.exists() \
            else ""
        return "\n".join(text.splitlines()[-lines:])

    # --- the hub's REST API, as the course's admin service ----------------
    def api(self, method, path, **kw):
        return requests.request(
            method, f"{self.url}/hub/api{path}", timeout=60,
            headers={"Authorization": f"token {self.token}"}, **kw)

    def start_servers(self, users=None, timeout=180):
        """Start ``users``' servers (all at once) and wait until ready."""
        users = list(users or self.users)
        for user in users:
            r = self.api("POST", f"/users/{user}/server")
            if r.status_code not in (201, 202, 400):  # 400: already running
                raise RuntimeError(f"{user}: {r.status_code} {r.text}")
        deadline = time.monotonic() + timeout
        waiting = set(users)
        while waiting and time.monotonic() < deadline:
            for user in sorted(waiting):
                server = self.api("GET", f"/users/{user}").json()[
                    "servers"].get("", {})
                if server.get("ready"):
                    waiting.discard(user)
            time.sleep(0.5)
        if waiting:
            raise RuntimeError(f"servers not ready: {sorted(waiting)}\n"
                               f"{self.tail()}")

    def user_token(self, user):
        """A token of ``user``'s own (what their browser session holds)."""
        if user not in self.tokens:
            r = self.api("POST", f"/users/{user}/tokens",
                         json={"note": "course test", "expires_in": 3600})
            r.raise_for_status()
            self.tokens[user] = r.json()["token"]
        return self.tokens[user]

    def as_user(self, user):
        return UserSession(self, user)

    # --- tear-down --------------------------------------------------------
    def stop(self):
        """Stop the users' servers, the hub and its proxy; then end any
        process still marked with this hub's root (kernels, a stray
        server): only processes this hub started."""
        if self.proc is not None and self.proc.poll() is None:
            # the hub stops every server (all at once) and the proxy
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        for pid in self.marked_processes():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def marked_processes(self):
        """Ids of the live processes whose environment holds MARK=root."""
        mark = f"{MARK}={self.root}".encode()
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                environ = (entry / "environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if mark in environ:
                found.append(int(entry.name))
        return found

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc):
        self.stop()


class UserSession:
    """HTTP calls to one user's server through the hub's proxy, with the
    user's own token."""

    def __init__(self, hub, user):
        self.hub, self.user = hub, user
        self.base = f"{hub.url}/user/{user}"
        self.headers = {"Authorization": f"token {hub.user_token(user)}"}

    def request(self, method, path, timeout=300, **kw):
        return requests.request(method, self.base + path, timeout=timeout,
                                headers=self.headers, **kw)

    def ok(self, method, path, **kw):
        r = self.request(method, path, **kw)
        if not r.ok:
            raise RuntimeError(f"{self.user} {method} {path}: "
                               f"{r.status_code} {r.text[:2000]}")
        return r.json() if r.content else None

    # the contents API (what JupyterLab's editor does)
    def read_notebook(self, path):
        return self.ok("GET", f"/api/contents/{path}?content=1")["content"]

    def write_notebook(self, path, nb):
        self.ok("PUT", f"/api/contents/{path}",
                json={"type": "notebook", "format": "json", "content": nb})

    def listing(self, path=""):
        return {item["name"]: item for item in
                self.ok("GET", f"/api/contents/{path}")["content"]}

    def read_text(self, path):
        return self.ok("GET", f"/api/contents/{path}?content=1&type=file"
                              "&format=text")["content"]

    # nbgrader's Assignments tab (assignment_list server extension)
    # (each answers {"success": ..., "value": the Assignments tab's list})
    def assignments(self, course=COURSE_ID):
        return self._value("list", self.ok(
            "GET", "/assignments", params={"course_id": course}))

    def assignment_action(self, action, assignment, course=COURSE_ID):
        """fetch, submit or fetch_feedback; returns the tab's new list."""
        return self._value(action, self.ok(
            "POST", f"/assignments/{action}",
            json={"course_id": course, "assignment_id": assignment}))

    def _value(self, action, reply):
        if not reply.get("success"):
            raise RuntimeError(f"{self.user} {action}: {reply.get('value')}")
        return reply["value"]

    # the formgrader's API (the teacher's Formgrader panel)
    def formgrader(self, method, path, **kw):
        reply = self.ok(method, f"/formgrader/api/{path}", **kw)
        if isinstance(reply, dict) and reply.get("success") is False:
            raise RuntimeError(f"formgrader {path}: {reply.get('error')}\n"
                               f"{reply.get('log', '')}")
        return reply

    # a terminal in the user's JupyterLab
    def terminal(self, command, timeout=120):
        """Run ``command`` in a new terminal of the user's server; returns
        (exit status, the terminal's output)."""
        name = self.ok("POST", "/api/terminals")["name"]
        try:
            return asyncio.run(self._terminal(name, command, timeout))
        finally:
            self.request("DELETE", f"/api/terminals/{name}")

    async def _terminal(self, name, command, timeout):
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect

        url = self.base.replace("http://", "ws://", 1) + \
            f"/terminals/websocket/{name}"
        ws = await websocket_connect(HTTPRequest(url, headers=self.headers))
        await ws.write_message(json.dumps(
            ["stdin", f'{command}; echo "END""$?""END"\r']))
        out, deadline = "", time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                message = await asyncio.wait_for(
                    ws.read_message(), deadline - time.monotonic())
                if message is None:
                    break
                kind, *rest = json.loads(message)
                if kind == "stdout":
                    out += rest[0]
                    done = re.search(r"END(\d+)END", out)
                    if done:
                        return int(done[1]), out
        finally:
            ws.close()
        raise RuntimeError(f"{self.user}: no end to {command!r}:\n{out}")


def exchange_modes(exchange, course=COURSE_ID):
    """{path relative to the exchange: mode} of the root and course folders
    (stat.S_IMODE: permission, sticky and set-id bits)."""
    modes = {".": stat.S_IMODE(os.stat(exchange).st_mode)}
    for name in COURSE_MODES:
        path = Path(exchange) / course / name
        if path.exists():
            modes[f"{course}/{name}".rstrip("/")] = stat.S_IMODE(
                os.stat(path).st_mode)
    return modes


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir")
    parser.add_argument("chapters", nargs="*", default=["00_preface"])
    args = parser.parse_args(argv)

    stopping = []

    def interrupt(signum, frame):
        if stopping:  # a second Ctrl-C: the first one's stop goes on
            return
        stopping.append(signum)
        raise KeyboardInterrupt

    # Ctrl-C (SIGINT, even where a shell started this in the background,
    # which ignores it), a TERM or a closed terminal (HUP): stop everything
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, interrupt)
    try:
        with Hub(args.dir, args.chapters) as hub:
            try:  # a Ctrl-C from here on, even during the banner, says so
                # one write: a signal cannot land between the lines
                print(f"JupyterHub at {hub.url}/hub/login: users "
                      f"{', '.join(hub.users)}, password {hub.password}\n"
                      "teacher: Nbgrader > Formgrader (course in ~/course); "
                      "Ctrl-C stops everything\n", end="", flush=True)
                while hub.proc.poll() is None:
                    time.sleep(1)
            finally:
                print("stopping the hub, its proxy and every server ...",
                      flush=True)
    except KeyboardInterrupt:
        pass
    print("stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
