"""ExaBGP API process: appends every line ExaBGP writes to us (JSON messages) to a file.

Usage (from an ExaBGP `process` block): exabgp_recorder.py OUTFILE
"""
import sys


def main() -> int:
    with open(sys.argv[1], "a", buffering=1) as out:
        for line in sys.stdin:
            out.write(line if line.endswith("\n") else line + "\n")
            out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
