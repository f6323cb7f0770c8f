"""A question of a course's own: an example (appendix/teachers.md).

Copy it to COURSE/questions/<assignment>/<name>.py and run
``make assignments``: the assignment gets, before its summary, the exercise
(TITLE, TEXT), an answer cell with the signature of the ``my_...`` function
below (its body, the teacher's answer, is the solution nbgrader takes out of
the students' copy) and a test cell worth POINTS. Students see PUBLIC_TEST; when
the assignment is graded, a hidden test runs the student's function on
``cases`` and compares it with the teacher's answer (grading/mha_grader.py),
in a fresh process. The file stays in the course folder: it is never
released.
"""

import torch

from mha_book.exercises import Case

TITLE = "Write a stable log-softmax"
TEXT = """\
Write `my_log_softmax(scores)`: the logarithm of the softmax of `scores`
over the last axis, for any number of leading axes. Do not take the log of
the softmax's weights: a weight that underflows to 0 has a log of `-inf`.
Shift the scores first, as for the softmax, and use
log softmax(s)_j = (s_j - m) - log sum_k exp(s_k - m), with m the largest
score of the row. Do not call torch's own softmax or log-softmax."""
POINTS = 2
HINT = "subtract the row's max m, then (s - m) - log(sum(exp(s - m)))"
# the package's or torch's answers a student may not call
FORBIDDEN = ["torch.log_softmax", "torch.nn.functional.log_softmax",
             "torch.Tensor.log_softmax", "torch.softmax",
             "torch.nn.functional.softmax", "torch.Tensor.softmax"]
# what students see in the test cell (the graded test is hidden)
PUBLIC_TEST = """\
out = my_log_softmax(torch.tensor([0.0, 0.0]))
assert torch.allclose(out, torch.log(torch.tensor([0.5, 0.5])))"""


def my_log_softmax(scores):
    # the row's largest score: every shifted score is <= 0, exp cannot
    # overflow, and the largest term of the sum is exactly 1
    shifted = scores - scores.amax(dim=-1, keepdim=True)
    return shifted - shifted.exp().sum(dim=-1, keepdim=True).log()


def cases(rng):
    """The graded cases. ``rng`` (random.Random) and torch's generator are
    seeded from the course secret, so each course grades other numbers."""
    rows = rng.randint(2, 9)
    return [
        Case("one row [1, 2, 3]", args=(torch.tensor([1.0, 2.0, 3.0]),)),
        Case(f"{rows} rows of 5 scores", args=(torch.randn(rows, 5),)),
        Case("scores around 1000 (exp overflows)",
             args=(torch.randn(3, 4) + 1000.0,)),
        Case("scores 100 apart (a weight underflows to 0)",
             args=(torch.tensor([0.0, -100.0, 1.0]),)),
        Case("a batch (2, 3, 4)", args=(torch.randn(2, 3, 4) * 5,)),
    ]
