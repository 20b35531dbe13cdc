#!/usr/bin/env bash
# Installs the real USI opponents used by `keima match` (GPS Shogi and Fairy-Stockfish)
# from Debian's packages. Needs root (or sudo) and the package registry.
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update
$SUDO apt-get install -y gpsshogi gpsshogi-data fairy-stockfish
ls -l /usr/games/gpsusi /usr/games/fairy-stockfish
