"""Kernel-enforced isolation for learner children: the levels this machine offers, the launch command,
Landlock, seccomp, memory cgroups and the files a child may see. It imports only :mod:`autograder.core`.

Kept free of imports: a child imports this package before it is confined.
"""
