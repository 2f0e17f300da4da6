"""The course's own library: the code a learner is given, as opposed to the code a learner writes.

A notebook imports from here what a stage hands over ready-made: the workloads and traces, the
simulators, the radix tree's picture, the serving loop, the attack harnesses and ``why`` (what a
prediction's answer means). An earlier stage's answers become given code for the stages after it;
they are re-exported here under a neutral name (``workbook.block_pool`` for stage 3's block pool),
so that no notebook imports from ``solutions``, the instructor's side of the course.

Which module a stage may see is decided in one place, :func:`autograder.core.layout.visible_modules`:
a module that re-exports stage N's reference is visible to the stages after N only.
"""
