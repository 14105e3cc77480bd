#!/usr/bin/env python3
"""Writes saved_model_cli goldens for the TF Serving test SavedModels.

For every SavedModel under SHARED/fixtures/tf-serving/<model>/<version>/ this runs the real
saved_model_cli show code (in one process, with stdout captured) and writes
OUT/<model>_<version>/:

  cases.tsv              one line per golden: file name, then the `show` flags, tab-separated
  show_dir.txt           show --dir D
  show_tagset_<T>.txt    show --dir D --tag_set T
  show_listops_<T>.txt   show --dir D --tag_set T --list_ops
  show_sig_<T>_<K>.txt   show --dir D --tag_set T --signature_def K
  show_all.txt           show --dir D --all
  err_tagset.txt         the error message for an unknown tag-set
  err_sig_<T>.txt        the error message for an unknown signature key
  vars.txt               inspect_checkpoint --file_name D/variables/variables
  vars_all.txt           the same with --all_tensors (values printed by numpy)

It also writes OUT/zoo-inspect/<name>.txt, inspect_checkpoint --all_tensors for every model of
the committed zoo (tests/fixtures/zoo) that has variables: numpy's printing of every dtype there.

Directories that are not SavedModels get only `notsavedmodel.txt` (TF's message). The ops set
line and the "Please choose from" list are sorted (TensorFlow prints them in an order that changes
from run to run); the test sorts them on both sides too.

usage: python tools/make_tfserving_goldens.py [--shared ../shared] [--out tests/fixtures/tf-serving-goldens]
"""
import argparse
import contextlib
import io
import os
import re
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from tensorflow.python.tools import saved_model_cli as smcli  # noqa: E402
from tensorflow.python.tools import inspect_checkpoint  # noqa: E402
from tensorflow.python.tools import saved_model_utils  # noqa: E402


def stable(text):
  """Sorts what TF prints in Python set / protobuf map order (random per process), so that
  regenerating the goldens does not churn them: the ops set and "Please choose from" lists."""
  lines = []
  for line in text.split("\n"):
    m = re.match(r"^(The MetaGraph with tag set .* contains the following ops: \{)(.*)\}$", line)
    if m:
      line = m.group(1) + ", ".join(sorted(m.group(2).split(", "))) + "}"
    m = re.match(r"^(.*Please choose from: )(.*)$", line)
    if m:
      line = m.group(1) + ", ".join(sorted(m.group(2).split(", ")))
    lines.append(line)
  return "\n".join(lines)


def capture(fn, *args):
  out = io.StringIO()
  with contextlib.redirect_stdout(out):
    fn(*args)
  return stable(out.getvalue())


def safe(name):
  return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def write(path, text):
  with open(path, "w", encoding="utf-8", newline="") as f:
    f.write(text)


def goldens_for(model_dir, out_dir):
  os.makedirs(out_dir, exist_ok=True)
  cases = []

  def case(fname, flags, fn, *args):
    write(os.path.join(out_dir, fname), capture(fn, *args))
    cases.append([fname] + flags)

  case("show_dir.txt", [], smcli._show_tag_sets, model_dir)
  sm = saved_model_utils.read_saved_model(model_dir)
  for mg in sm.meta_graphs:
    tag_set = ",".join(mg.meta_info_def.tags)
    t = safe(tag_set)
    case("show_tagset_%s.txt" % t, ["--tag_set", tag_set],
         smcli._show_signature_def_map_keys, model_dir, tag_set)
    case("show_listops_%s.txt" % t, ["--tag_set", tag_set, "--list_ops"],
         lambda d, ts: (smcli._show_ops_in_metagraph(d, ts),
                        smcli._show_signature_def_map_keys(d, ts)),
         model_dir, tag_set)
    for key in sorted(mg.signature_def.keys()):
      case("show_sig_%s_%s.txt" % (t, safe(key)), ["--tag_set", tag_set, "--signature_def", key],
           smcli._show_inputs_outputs, model_dir, tag_set, key)
    try:
      smcli._show_inputs_outputs(model_dir, tag_set, "no_such_signature")
    except ValueError as e:
      write(os.path.join(out_dir, "err_sig_%s.txt" % t), stable(str(e)) + "\n")
      cases.append(["err_sig_%s.txt" % t, "--tag_set", tag_set, "--signature_def",
                    "no_such_signature"])
  case("show_all.txt", ["--all"], smcli._show_all, model_dir)
  try:
    smcli._show_signature_def_map_keys(model_dir, "no_such_tag")
  except RuntimeError as e:
    write(os.path.join(out_dir, "err_tagset.txt"), str(e) + "\n")
    cases.append(["err_tagset.txt", "--tag_set", "no_such_tag"])
  prefix = os.path.join(model_dir, "variables", "variables")
  if os.path.exists(prefix + ".index"):
    write(os.path.join(out_dir, "vars.txt"),
          capture(inspect_checkpoint.print_tensors_in_checkpoint_file, prefix, "", False))
    write(os.path.join(out_dir, "vars_all.txt"),
          capture(inspect_checkpoint.print_tensors_in_checkpoint_file, prefix, "", True))
  write(os.path.join(out_dir, "cases.tsv"), "".join("\t".join(c) + "\n" for c in cases))


def main():
  here = os.path.dirname(os.path.abspath(__file__))
  ap = argparse.ArgumentParser()
  ap.add_argument("--shared", default=os.path.join(here, "..", "..", "shared"))
  ap.add_argument("--out", default=os.path.join(here, "..", "tests", "fixtures", "tf-serving-goldens"))
  a = ap.parse_args()
  zoo = os.path.join(here, "..", "tests", "fixtures", "zoo")
  for name in sorted(os.listdir(zoo)) if os.path.isdir(zoo) else []:
    prefix = os.path.join(zoo, name, "model", "variables", "variables")
    if os.path.exists(prefix + ".index"):
      os.makedirs(os.path.join(a.out, "zoo-inspect"), exist_ok=True)
      write(os.path.join(a.out, "zoo-inspect", name + ".txt"),
            capture(inspect_checkpoint.print_tensors_in_checkpoint_file, prefix, "", True))
  root = os.path.join(a.shared, "fixtures", "tf-serving")
  for model in sorted(os.listdir(root)):
    mdir = os.path.join(root, model)
    if not os.path.isdir(mdir) or model.startswith("_"):
      continue
    for version in sorted(os.listdir(mdir)):
      vdir = os.path.join(mdir, version)
      if not os.path.isdir(vdir):
        continue
      out_dir = os.path.join(a.out, "%s_%s" % (model, version))
      if any(os.path.exists(os.path.join(vdir, f)) for f in ("saved_model.pb", "saved_model.pbtxt")):
        goldens_for(vdir, out_dir)
      else:
        os.makedirs(out_dir, exist_ok=True)
        try:
          saved_model_utils.read_saved_model(vdir)
        except IOError as e:
          # The message names the directory; keep the golden free of this machine's paths.
          write(os.path.join(out_dir, "notsavedmodel.txt"), str(e).replace(vdir, "DIR") + "\n")
      print("wrote", out_dir, file=sys.stderr)


if __name__ == "__main__":
  main()
