import sys

from python_adapter.cli import main

sys.exit(main())
