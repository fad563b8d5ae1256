#!/usr/bin/env bash
# Installs what the cluster test (tests/workflow/test_cluster.py) needs: a single-node SLURM from
# Debian's packages (slurmctld, slurmd, the client commands) and munge. Needs root.
# Quick when everything is there already; starts no daemon (the test starts its own,
# on loopback, and stops them by pid).
set -euo pipefail

missing=()
for pair in slurmctld:slurmctld slurmd:slurmd sbatch:slurm-client squeue:slurm-client \
            scancel:slurm-client scontrol:slurm-client munged:munge; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
packages=$(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')
if [ "$(id -u)" -ne 0 ]; then
  echo "install-slurm: missing $packages; run this script as root" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-slurm: missing $packages and no apt-get here; install SLURM by hand" >&2
  exit 1
fi

# Keep the packages' own init scripts from starting munge or slurm on install (Docker
# images already ship this policy; elsewhere it is put in place only for this install).
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy"
  trap 'rm -f "$policy"' EXIT
fi

echo "install-slurm: apt-get install $packages"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086  # one word per package
apt-get install -y -qq --no-install-recommends $packages >/dev/null
