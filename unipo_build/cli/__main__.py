import sys

from unipo_build.cli.main import main

sys.exit(main())
