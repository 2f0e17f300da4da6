"""Command line: ``python -m autograder {build,grade,course,gradescope} ...``."""
from autograder.commands.cli import main

raise SystemExit(main())
