"""The course model every other room shares: where things are (``layout``), what a stage is (``spec``,
``quiz``), the course's settings, both languages and every sentence said to a learner, outcomes as data,
results, and reading Python source as text. It imports no other room.
"""
