# common.bash - helpers shared by the CLI tests (sourced; not .sh so CMake does not make it a test).

# Sorts the Python set printed on saved_model_cli's ops line, whose order is arbitrary in Python,
# and the entries of dict-valued arguments (see below).
sort_ops_line() {
  LC_ALL=C awk '
    /^The MetaGraph with tag set .* contains the following ops: \{.*\}$/ {
      i = index($0, ": {"); head = substr($0, 1, i + 2); set = substr($0, i + 3)
      set = substr(set, 1, length(set) - 1)
      n = split(set, a, ", ")
      for (x = 2; x <= n; x++) { v = a[x]; y = x - 1; while (y > 0 && a[y] > v) { a[y + 1] = a[y]; y-- } a[y + 1] = v }
      out = head; for (x = 1; x <= n; x++) out = out (x > 1 ? ", " : "") a[x]
      print out "}"; next }
    # A dict-valued function argument: Python prints its entries in the order it decoded them, which
    # differs between exports of the same model; compare them sorted.
    /^ *Value: \{\x27.*\}$/ {
      i = index($0, "{"); head = substr($0, 1, i); body = substr($0, i + 1); body = substr(body, 1, length(body) - 1)
      tail = "}"; if (substr(body, length(body) - 3) == ", \b\b") { tail = ", \b\b}"; body = substr(body, 1, length(body) - 4) }
      n = split(body, a, ", \x27")
      for (x = 2; x <= n; x++) a[x] = "\x27" a[x]
      for (x = 2; x <= n; x++) { v = a[x]; y = x - 1; while (y > 0 && a[y] > v) { a[y + 1] = a[y]; y-- } a[y + 1] = v }
      out = head; for (x = 1; x <= n; x++) out = out (x > 1 ? ", " : "") a[x]
      print out tail; next }
    { print }' "$1"
}

# Compares file $1 (ours) with golden $2 after sorting the ops set of both; prints a diff.
same_output() {
  if cmp -s <(sort_ops_line "$1") <(sort_ops_line "$2"); then return 0; fi
  diff <(sort_ops_line "$2" | cat -A) <(sort_ops_line "$1" | cat -A) | head -20
  return 1
}

# Sorts the comma-separated list after "Please choose from: " (stdin to stdout).
sort_choices() {
  LC_ALL=C awk '{ i = index($0, "Please choose from: ")
         if (!i) { print; next }
         head = substr($0, 1, i + 19); n = split(substr($0, i + 20), a, ", ")
         for (x = 2; x <= n; x++) { v = a[x]; y = x - 1; while (y > 0 && a[y] > v) { a[y + 1] = a[y]; y-- } a[y + 1] = v }
         out = head; for (x = 1; x <= n; x++) out = out (x > 1 ? ", " : "") a[x]; print out }'
}
