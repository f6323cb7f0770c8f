"""scripts/torchrun_attention.py under ``torchrun --standalone`` with 2 gloo processes: every
scheme (ring, zigzag, Ulysses, tensor parallelism) matches the one-device attention (exit status 0, one line per scheme on rank 0), and a
mismatch (here: a tolerance of 0, which ring attention's online softmax cannot meet exactly)
gives a non-zero exit status."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "torchrun_attention.py"
TORCHRUN = Path(sys.executable).parent / "torchrun"


def torchrun(*args, timeout=180):
    if not TORCHRUN.exists():
        pytest.skip(f"no torchrun next to {sys.executable}")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}  # gloo on CPU
    command = [str(TORCHRUN), "--nproc-per-node", "2", "--standalone", str(SCRIPT), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                          env=env)


def scheme_lines(stdout):
    return [line for line in stdout.splitlines() if "max error" in line]


# the smallest sizes the script accepts (L a multiple of 2 x the ranks, the ranks dividing H and
# a multiple of Hkv): the run's seconds are torchrun's and the processes' start
SMALLEST = ("--seq-len", "4", "--heads", "2", "--kv-heads", "1", "--d-head", "1", "--batch", "1")


def test_every_scheme_matches_one_device():
    done = torchrun(*SMALLEST)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = scheme_lines(done.stdout)
    assert [line.split("  ")[0].strip() for line in lines] == [
        "ring", "ring zigzag", "ulysses", "tensor"], done.stdout
    for line in lines:
        assert " ok " in line and " sent " in line and " ms " in line, line
        assert "[2 ranks, cpu]" in line, line
    for line in lines[:3]:  # measured by traffic(), equal to layout.sent_bytes
        sent, formula = re.search(r"sent (\d+) bytes/rank \(formula (\d+)\)", line).groups()
        assert sent == formula, line


def test_a_mismatch_exits_non_zero():
    done = torchrun("--atol", "0", "--seq-len", "32")
    assert done.returncode != 0, done.stdout + done.stderr
    assert "MISMATCH" in done.stdout
