"""Command line: ``python -m autograder {build,grade,course,gradescope} ...``."""
from autograder.cli import main

raise SystemExit(main())
