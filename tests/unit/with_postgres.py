"""Run a command with ACTD_TEST_PG_URL naming a fresh database on a private
PostgreSQL server (tests/integration/pg.py), stopped afterwards.

    with_postgres.py COMMAND ARGS...
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
import pg  # noqa: E402

url = pg.database()
environment = dict(os.environ, ACTD_TEST_PG_URL=url)
sys.exit(subprocess.run(sys.argv[1:], env=environment).returncode)
