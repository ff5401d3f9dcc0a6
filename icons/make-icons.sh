#!/usr/bin/env bash
# Draws Taskdeck's mark (a short stack of task cards, the front one with a progress bar) and renders the
# RGBA PNG sizes tauri.conf.json references, and the Windows icon (the same sizes in one .ico) that a
# Windows build embeds. Re-run after changing the drawing; needs Debian `imagemagick`.
set -euo pipefail
cd "$(dirname "$0")"
im=/usr/bin/convert

# 1024 px master on a transparent canvas: macOS-style safe margin of 100 px around a rounded tile.
$im -size 1024x1024 xc:none \
  \( -size 824x824 gradient:'#4f46e5-#312e81' \
     \( -size 824x824 xc:none -fill white -draw 'roundrectangle 0,0 823,823 184,184' \) \
     -compose CopyOpacity -composite \) -geometry +100+100 -compose Over -composite \
  -fill '#7c76e6' -draw 'roundrectangle 322,262 702,330 34,34' \
  -fill '#b4b0f2' -draw 'roundrectangle 272,322 752,410 40,40' \
  -fill white -draw 'roundrectangle 222,402 802,762 56,56' \
  -fill '#c7d2fe' -draw 'roundrectangle 302,640 722,682 21,21' \
  -fill '#4f46e5' -draw 'roundrectangle 302,640 582,682 21,21' \
  -fill '#312e81' -draw 'roundrectangle 302,482 622,524 21,21' \
  -fill '#a5b4fc' -draw 'roundrectangle 302,556 522,590 17,17' \
  PNG32:icon.png

for size in 32 128 256; do
  $im icon.png -filter Lanczos -resize ${size}x${size} PNG32:${size}x${size}.png
done
# Windows reads PNG entries in an .ico since Vista; the resource compiler embeds it whole.
$im 32x32.png 128x128.png 256x256.png icon.ico
