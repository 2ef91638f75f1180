"""``python -m sklearn_cispa``: the reproduction report."""

from sklearn_cispa.report import main

if __name__ == "__main__":
    raise SystemExit(main())
