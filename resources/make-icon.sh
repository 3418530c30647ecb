#!/usr/bin/env bash
# Draws resources/qklab.png, the application icon: an attention-logit curve that runs away
# (red) past the dashed intervention line, and one that QK-norm holds under it (blue).
# ImageMagick only (its SVG delegates are not installed on every machine).
set -euo pipefail
cd "$(dirname "$0")"
convert -size 256x256 xc:none \
  -fill '#1d2b45' -draw 'roundrectangle 8,8 248,248 40,40' \
  -stroke '#f2c14e' -strokewidth 6 -fill none \
  -draw 'line 40,92 64,92' -draw 'line 76,92 100,92' -draw 'line 112,92 136,92' \
  -draw 'line 148,92 172,92' -draw 'line 184,92 216,92' \
  -stroke '#e4572e' -strokewidth 12 -draw 'polyline 40,200 80,190 120,170 150,140 175,100 195,60 212,36' \
  -stroke '#76b6ff' -strokewidth 12 -draw 'polyline 40,204 80,186 120,160 150,132 180,112 212,104' \
  -stroke none -fill white -font DejaVu-Sans-Bold -pointsize 34 -gravity south -annotate +0+14 'qk' \
  qklab.png
