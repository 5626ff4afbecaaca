#!/usr/bin/env python3
"""Prints the rules of prometheusrule.yaml (its spec) as a plain Prometheus rule file, for a
Prometheus without the Operator (`rule_files:`) and for promtool:

    manifests/monitoring/plain_rules.py > /etc/prometheus/vipd-rules.yaml
    promtool check rules /etc/prometheus/vipd-rules.yaml

The PrometheusRule is the only hand-maintained copy; tests/monitoring runs this script. Needs
PyYAML (Debian: python3-yaml).
"""
import os
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))


class _Dumper(yaml.SafeDumper):
    """Multi-line expressions as block scalars (`|`), as in the PrometheusRule."""


_Dumper.add_representer(
    str, lambda d, s: d.represent_scalar("tag:yaml.org,2002:str", s,
                                         style="|" if "\n" in s else None))


def plain_rules(path: str = os.path.join(HERE, "prometheusrule.yaml")) -> str:
    with open(path) as f:
        rule = yaml.safe_load(f)
    if rule.get("kind") != "PrometheusRule" or "groups" not in rule.get("spec", {}):
        raise ValueError(f"{path}: not a PrometheusRule with spec.groups")
    header = ("# Generated from manifests/monitoring/prometheusrule.yaml by plain_rules.py; "
              "edit that file, not this one.\n")
    return header + yaml.dump({"groups": rule["spec"]["groups"]}, Dumper=_Dumper,
                              sort_keys=False, width=100)


if __name__ == "__main__":
    sys.stdout.write(plain_rules(*sys.argv[1:2]))
