"""Tiny tensor work on one CPU thread (the live figures' states, the explorer's recompute)."""

import torch


class one_thread:
    """Run the block on one CPU thread, then restore the thread count: a 12 x 64 matmul or a
    5 x 8 softmax is slower on two busy threads than on one."""

    def __enter__(self):
        self.threads = torch.get_num_threads()
        torch.set_num_threads(1)

    def __exit__(self, *exc):
        torch.set_num_threads(self.threads)
