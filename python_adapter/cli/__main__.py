import sys

from python_adapter.cli import main

if __name__ == "__main__":
    sys.exit(main())
