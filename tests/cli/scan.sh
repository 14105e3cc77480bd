#!/bin/bash
# scan.sh - `savedmodel scan` against what saved_model_cli scan printed (tests/fixtures/cli-run,
# made by tools/make_cli_run_goldens.py). Our extra line per MetaGraph (ops the runtime lacks) is
# checked for presence and then dropped, as are our lines per file-reading op (checked below); the Python sets are compared sorted (Python's order is
# arbitrary).
CLI=$1 SRC=$2 SHARED=$3
FX=$SRC/tests/fixtures/cli-run
ZOO=$SRC/tests/fixtures/zoo
[ -f "$FX/cases.tsv" ] || { echo "skipped: $FX/cases.tsv absent"; exit 77; }
have_shared=0; [ -d "$SHARED/fixtures/tf-serving" ] && have_shared=1

# Sorts the items of the {...} set at the end of each line.
sort_sets() {
  LC_ALL=C awk '/: \{.*\}$/ {
      i = index($0, ": {"); head = substr($0, 1, i + 2); set = substr($0, i + 3); set = substr(set, 1, length(set) - 1)
      n = split(set, a, ", ")
      for (x = 2; x <= n; x++) { v = a[x]; y = x - 1; while (y > 0 && a[y] > v) { a[y + 1] = a[y]; y-- } a[y + 1] = v }
      out = head; for (x = 1; x <= n; x++) out = out (x > 1 ? ", " : "") a[x]
      print out "}"; next }
    { print }' "$1"
}

fail=0 n=0 skipped=0
while IFS=$'\t' read -r -a f; do
  name=${f[0]} want_rc=${f[1]}
  case $name in scan*|ts_scan*) ;; *) continue;; esac
  if [[ "${f[*]}" == *@SHARED@* ]] && [ $have_shared -eq 0 ]; then skipped=$((skipped + 1)); continue; fi
  args=()
  for a in "${f[@]:3}"; do a=${a//@ZOO@/$ZOO}; a=${a//@FX@/$FX}; a=${a//@SHARED@/$SHARED}; args+=("$a"); done
  tmp=$(mktemp -d)
  "$CLI" "${args[@]}" >"$tmp/out" 2>"$tmp/err"; rc=$?; [ $rc -ne 0 ] && rc=1
  n=$((n + 1))
  ok=1
  # saved_model_cli exits 0 whatever it finds; ours exits 1 when an op is denylisted or unsupported
  if [ "$want_rc" = 0 ] && grep -qE 'contains the following denylisted ops|ops this runtime does not implement' "$tmp/out"; then
    want_rc=1
  fi
  if [ "$rc" != "$want_rc" ]; then echo "FAIL $name: exit $rc, expected $want_rc"; head -3 "$tmp/err"; ok=0; fi
  tf_lines=$(grep -c '^MetaGraph with tag set .* denylisted ops' "$tmp/out")
  our_lines=$(grep -c -e 'this runtime' "$tmp/out")
  if [ "$tf_lines" != "$our_lines" ]; then echo "FAIL $name: $tf_lines denylist lines but $our_lines runtime lines"; ok=0; fi
  grep -v -e 'this runtime' -e ' reads a file: ' "$tmp/out" >"$tmp/tf"
  if ! cmp -s <(sort_sets "$tmp/tf") <(sort_sets "$FX/$name.out"); then
    echo "FAIL $name: differs from saved_model_cli scan"; diff <(sort_sets "$FX/$name.out") <(sort_sets "$tmp/tf") | head; ok=0
  fi
  [ $ok -eq 1 ] || fail=$((fail + 1))
  rm -rf "$tmp"
done <"$FX/cases.tsv"

# a tag-set that is not there: TF's message and exit 1
if "$CLI" scan --dir "$ZOO/tf1_square/model" --tag_set nope >/dev/null 2>/tmp/scan_err.$$; then echo "FAIL scan: missing tag-set accepted"; fail=$((fail + 1)); fi
grep -q "could not be found in the SavedModel" /tmp/scan_err.$$ || { echo "FAIL scan: tag-set message"; fail=$((fail + 1)); }
rm -f /tmp/scan_err.$$

# exit status: 1 with a denylisted op (its --json says so too), 0 without; --json parses
m=$ZOO/tf1_square/model
"$CLI" scan --dir "$m" >/dev/null; rc=$?
[ $rc -eq 0 ] || { echo "FAIL scan: exit $rc on a clean model"; fail=1; }
ops=$("$CLI" show --dir "$m" --tag_set serve --list_ops 2>/dev/null | sed -n 's/.*contains the following ops: {\(.*\)}$/\1/p' | tr -d "' " | cut -d, -f1)
if [ -n "$ops" ]; then
  "$CLI" scan --dir "$m" --op_denylist "$ops" >/dev/null; rc=$?
  [ $rc -eq 1 ] || { echo "FAIL scan: exit $rc with denylisted op $ops"; fail=1; }
  "$CLI" scan --dir "$m" --op_denylist "$ops,NoSuchOp" --json >"/tmp/scan_json.$$"; rc=$?
  python3 - "/tmp/scan_json.$$" "$ops" <<'PY' || { echo "FAIL scan --json"; fail=1; }
import json, sys
d = json.load(open(sys.argv[1]))
assert set(d) == {"meta_graphs", "found"}, d
assert d["found"] is True, d
(mg,) = d["meta_graphs"]
assert mg["tags"] == ["serve"], mg
assert mg["denylist"] == sorted([sys.argv[2], "NoSuchOp"]), mg
assert mg["denylisted_ops"] == [sys.argv[2]], mg
assert mg["unsupported_ops"] == [], mg
assert mg["file_ops"] == [], mg
PY
  [ $rc -eq 1 ] || { echo "FAIL scan --json: exit $rc"; fail=1; }
  rm -f "/tmp/scan_json.$$"
else
  echo "FAIL scan: no ops listed by show --list_ops"; fail=1
fi
# every file-reading op, with its path: a vocabulary asset and the checkpoint the loader feeds
# (inside the export: exit 0), a restore function's computed prefix
m=$ZOO/tf1_labels/model
"$CLI" scan --dir "$m" >"/tmp/scan_files.$$"; rc=$?
[ $rc -eq 0 ] || { echo "FAIL scan tf1_labels: exit $rc"; fail=1; }
grep -qF "reads a file: InitializeTableFromTextFileV2 node 'text_file_init/InitializeTableFromTextFileV2', path (asset) '$m/assets/labels.txt': inside the export directory" "/tmp/scan_files.$$" ||
  { echo "FAIL scan: no vocabulary line"; cat "/tmp/scan_files.$$"; fail=1; }
grep -qF "reads a file: RestoreV2 node 'save/RestoreV2', path (loader) '$m/variables/variables': inside" "/tmp/scan_files.$$" ||
  { echo "FAIL scan: no restore line"; fail=1; }
"$CLI" scan --dir "$ZOO/tf2_module/model" --json >"/tmp/scan_files.$$"
python3 - "/tmp/scan_files.$$" <<'PY' || { echo "FAIL scan --json file_ops"; fail=1; }
import json, sys
(mg,) = json.load(open(sys.argv[1]))["meta_graphs"]
(f,) = mg["file_ops"]
assert f["op"] == "RestoreV2" and f["function"].startswith("__inference__traced_restore_"), f
assert f["path"] is None and f["source"] == "computed" and f["outside"] is None, f
PY
rm -f "/tmp/scan_files.$$"
"$CLI" scan --help | grep -q "Exit status: 0 when no MetaGraph" || { echo "FAIL scan --help: exit status undocumented"; fail=1; }

echo "scan: $n cases, $fail failed, $skipped skipped (no ../shared)"
[ $fail -eq 0 ]
