"""ASV benchmarks of sklearn-cispa: one module ``bench_<method>.py`` per method.

The configuration uses ``environment_type: existing`` (``asv run --python=same``): the
benchmarks run in the current environment, against the checkout they belong to, which is
put first on ``sys.path`` (the same code as an editable install of that checkout).
"""

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)
