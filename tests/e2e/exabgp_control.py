"""ExaBGP API process: relays each line written to a FIFO to ExaBGP (its stdin is our stdout),
so a test can issue API commands (`withdraw route ...`, `announce route ...`) while ExaBGP runs.

Usage (from an ExaBGP `process` block): exabgp_control.py FIFO
The FIFO is reopened after each writer closes it; the process ends when ExaBGP closes our stdin's
other end (a write fails) or ExaBGP exits.
"""
import sys


def main() -> int:
    while True:
        with open(sys.argv[1]) as fifo:  # blocks until a writer opens it
            for line in fifo:
                sys.stdout.write(line if line.endswith("\n") else line + "\n")
                sys.stdout.flush()


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (BrokenPipeError, KeyboardInterrupt):
        sys.exit(0)
