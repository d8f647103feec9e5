#!/usr/bin/env bash
# Copies the graph-layout library's single dist file from node_modules (after `npm ci`) into
# vendor/, which the build embeds. Run it after changing @dagrejs/dagre's version in package.json.
set -euo pipefail
cd "$(dirname "$0")"
cp node_modules/@dagrejs/dagre/dist/dagre.min.js vendor/dagre.min.js
cp node_modules/@dagrejs/dagre/LICENSE vendor/dagre.LICENSE
