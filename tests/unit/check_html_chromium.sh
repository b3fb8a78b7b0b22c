#!/bin/sh
# The --html page in a real browser: p2pscope report, a bw sweep and lat run on
# the fake driver (GPUs named with markup in their names), each page opened in
# headless Chromium inside a wrapper page whose script reads what rendered: every
# SVG has a size, every text in it a box, the names show as text (no element made
# of them, an escaped "&lt;" in one shown as those four characters), as many
# figures as --svg wrote files (a one-GPU sweep too, whose GPU -> GPU tests have
# no case), each --svg file loaded as an image. Then the page's DOM as Chromium
# parsed it (--dump-dom) keeps the name escaped. Skips (77) only without Chromium.
# usage: check_html_chromium.sh P2PSCOPE_BINARY FAKE_LIBCUDA
set -eu
bin=$1
fake=$2
chromium=${CHROMIUM:-}
[ -n "$chromium" ] || chromium=$(command -v chromium || command -v chromium-browser || true)
[ -n "$chromium" ] || { echo "no chromium: skipped (apt-get install chromium)"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
name='<b>Bold</b> &lt; & <i>GPU'

browse() { # chromium's flags for a machine with no network, no session bus, no display
    timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync --user-data-dir="$dir/profile" \
        "$@" 2> "$dir/chromium.err"
}

# One run: $1 a label, the rest p2pscope's arguments (before the outputs); $gpus the fake's GPU count (default 2).
check_run() {
    label=$1
    shift
    mkdir -p "$dir/$label"
    env FAKE_CUDA_COUNT="${gpus:-2}" P2PSCOPE_LIBCUDA="$fake" FAKE_CUDA_MODE=contexts FAKE_CUDA_KERNELS=1 FAKE_CUDA_NAME="$name" \
        P2PSCOPE_LIBNVML=/nonexistent/libnvidia-ml.so.1 \
        "$bin" "$@" --html "$dir/$label/page.html" --svg "$dir/$label/svg" > "$dir/$label/out.txt" 2>&1 ||
        fail "$label: p2pscope $* exited $?: $(tail -3 "$dir/$label/out.txt")"
    nfig=$(ls "$dir/$label/svg" | grep -c '\.svg$' || true)
    [ "$nfig" -gt 0 ] || fail "$label: no figure written under --svg"
    # Self-contained: nothing to fetch (anchors inside the page only).
    if grep -Eo '(src|href|action)="[^"#][^"]*"' "$dir/$label/page.html" | grep -q .; then
        fail "$label: the page refers to something outside it: $(grep -Eo '(src|href)="[^"#][^"]*"' "$dir/$label/page.html" | head -3)"
    fi
    { cat <<'EOF'
<!DOCTYPE html>
<html><body>
<pre id="out">RESULT none: the check did not run</pre>
<iframe id="page" src="page.html" style="width:1400px;height:1200px"></iframe>
EOF
    # Each --svg file as an image: a file that is not a well-formed SVG document does not load.
    for f in $(ls "$dir/$label/svg" | grep '\.svg$'); do echo "<img class=\"svgfile\" src=\"svg/$f\">"; done
    cat <<'EOF'
<script>
function check() {
  var bad = [], d, svgs, texts = 0, name = '<b>Bold</b> &lt; & <i>GPU 0', imgs = document.querySelectorAll('img.svgfile');
  for (var j = 0; j < imgs.length; j++)
    if (!(imgs[j].complete && imgs[j].naturalWidth > 0)) bad.push('--svg file ' + imgs[j].getAttribute('src') + ' did not load');
  try { d = document.getElementById('page').contentDocument; } catch (e) { d = null; bad.push('no access: ' + e); }
  if (!d || !d.body) { document.getElementById('out').textContent = 'RESULT bad: no page ' + bad.join('; '); return; }
  svgs = d.querySelectorAll('svg');
  for (var i = 0; i < svgs.length; i++) {
    var r = svgs[i].getBoundingClientRect(), t = svgs[i].querySelectorAll('text'), shapes = svgs[i].querySelectorAll('path, rect');
    if (!(r.width > 20 && r.height > 20)) bad.push('svg ' + i + ' is ' + r.width + 'x' + r.height);
    if (t.length === 0) bad.push('svg ' + i + ' has no text');
    if (shapes.length < 2) bad.push('svg ' + i + ' has nothing drawn');
    for (var k = 0; k < t.length; k++) {
      var b = t[k].getBBox();
      if (t[k].textContent.trim() && !(b.width > 0 && b.height > 0)) bad.push('svg ' + i + ' text "' + t[k].textContent + '" has no box');
      texts++;
    }
  }
  if (d.querySelector('b, i')) bad.push('a GPU name became markup: <' + d.querySelector('b, i').tagName + '>');
  var exact = false, cells = d.querySelectorAll('td, th, li, p, dd, span, h1, h2, h3');
  for (var c = 0; c < cells.length && !exact; c++) exact = cells[c].textContent.indexOf(name) >= 0;
  if (!exact) bad.push('the GPU name is not shown as its own text (&lt; decoded, or markup made of it)');
  if (!d.querySelector('table') || d.querySelectorAll('h2').length < 2) bad.push('the page has no tables or sections');
  document.getElementById('out').textContent = 'RESULT ' + (bad.length ? 'bad: ' + bad.join('; ') : 'ok') +
    ' svgs=' + svgs.length + ' texts=' + texts;
}
window.addEventListener('load', check);
</script>
</body></html>
EOF
    } > "$dir/$label/wrapper.html"
    browse --allow-file-access-from-files --virtual-time-budget=10000 --dump-dom "file://$dir/$label/wrapper.html" \
        > "$dir/$label/wrapper.dom" || fail "$label: chromium failed: $(tail -3 "$dir/chromium.err")"
    result=$(sed -n 's/.*<pre id="out">\(RESULT[^<]*\)<.*/\1/p' "$dir/$label/wrapper.dom")
    echo "$label: $result"
    case $result in
    "RESULT ok svgs=$nfig "*) ;;
    "RESULT ok "*) fail "$label: the page shows a different number of figures than --svg wrote ($nfig): $result" ;;
    *) fail "$label: $result" ;;
    esac
    # The DOM as parsed, serialized again: the name's markup is text there.
    browse --dump-dom "file://$dir/$label/page.html" > "$dir/$label/page.dom" || fail "$label: chromium failed"
    grep -q '&lt;b&gt;Bold&lt;/b&gt; &amp;lt; &amp; &lt;i&gt;GPU 0' "$dir/$label/page.dom" || fail "$label: the name is not escaped in the DOM"
    if grep -q '<b>Bold' "$dir/$label/page.dom"; then fail "$label: the name's markup was parsed"; fi
}

check_run report report -t 'gpu_to_gpu_write_*,host_to_gpu_ce,gpu_to_gpu_bidir_write_ce' -s 64K -n 1 --max-samples 1 -w 0
check_run sweep bw -t 'gpu_to_gpu_write_*' -b 4K -e 1M -n 1 --max-samples 1 -w 0
# One GPU, every test: those needing two GPUs have no case; the page and --svg show the same figures.
gpus=1; check_run sweep1 bw -b 4K -e 64K -n 1 --max-samples 1 -w 0
# Eight GPUs: 56 paths drawn as a figure per source GPU, alike in the page and --svg.
gpus=8; check_run sweep8 bw -t 'gpu_to_gpu_write_*' -b 4K -e 64K -n 1 --max-samples 1 -w 0
gpus=2
check_run lat lat -t 'gpu_to_gpu_chase,gpu_to_gpu_copy_ce' -n 20
echo "ok: the pages render in $("$chromium" --version 2>/dev/null || echo chromium)"
