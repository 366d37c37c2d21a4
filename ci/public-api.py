#!/usr/bin/env python3
"""The public API of each library crate, as a checked-in list that CI compares.

An item becomes public only by a reviewed change: this lists, for each crate, every item
reachable by a path from its root (modules, types, traits, functions, constants, statics,
macros, re-exports followed), every public field and enum variant, and every public
associated item of an inherent impl, one per line ("kind path"), sorted, from rustdoc's
JSON output (`--output-format json`, unstable: RUSTC_BOOTSTRAP=1 on a stable toolchain).
Trait impls are left out: what a type implements is in its derive list and docs.

    python3 ci/public-api.py           # compare with api/*.txt; exit 1 on a difference
    python3 ci/public-api.py --write   # write api/*.txt (commit it with the change)

seekless-sys, the platform layer, makes no semver promise (its crate docs say so): its
list is recorded all the same, so that what the other crates lean on changes by a reviewed
change too, but a change to it is not a break of the library's interface. The platform
items differ per target (`pub use linux::*`); the lists are the Linux ones.
Each list names the rustdoc JSON format that made it; another toolchain's is not compared
(said), so a toolchain change is not taken for an API change.
"""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CRATES = ["seekless-sys", "seekless-core", "seekless-jobs", "seekless-catalog", "seekless"]


def rustdoc_json(package):
    env = dict(os.environ, RUSTC_BOOTSTRAP="1")
    subprocess.run(["cargo", "rustdoc", "-q", "-p", package, "--lib", "--", "-Z",
                    "unstable-options", "--output-format", "json"],
                   cwd=ROOT, env=env, check=True)
    name = package.replace("-", "_")
    with open(os.path.join(ROOT, "target", "doc", f"{name}.json")) as f:
        return json.load(f)


def items(doc):
    index = doc["index"]
    get = lambda i: index.get(str(i))
    out = set()
    seen = set()

    def members(ids, path):
        """The public members of a module (`ids`) at `path`, re-exports followed."""
        for child in ids:
            c = get(child)
            if c is None or c.get("visibility") != "public":
                continue
            if "use" in c["inner"]:
                use = c["inner"]["use"]
                t = get(use.get("id")) if use.get("id") is not None else None
                if use.get("is_glob"):
                    if t is not None and t.get("crate_id") == 0 and "module" in t["inner"]:
                        members(t["inner"]["module"]["items"], path)
                    else:
                        out.add(f"use {'::'.join(path)}::* = {use['source']}::*")
                elif t is not None and t.get("crate_id") == 0:
                    walk(use["id"], path + [use["name"]])
                else:
                    # Another crate's item (or the crate) re-exported here.
                    out.add(f"use {'::'.join(path + [use['name']])} = {use['source']}")
                continue
            if c.get("name"):
                walk(child, path + [c["name"]])

    def walk(item_id, path):
        item = get(item_id)
        if item is None or item.get("crate_id") != 0:
            return
        inner = item["inner"]
        kind = next(iter(inner))
        key = (item_id, tuple(path))
        if key in seen:
            return
        seen.add(key)
        if kind == "module":
            out.add(f"mod {'::'.join(path)}")
            members(inner["module"]["items"], path)
            return
        out.add(f"{kind} {'::'.join(path)}")
        if kind == "struct":
            shape = inner["struct"]["kind"]
            fields = []
            if isinstance(shape, dict):
                fields = (shape.get("plain") or {}).get("fields", []) + [
                    f for f in (shape.get("tuple") or []) if f is not None]
            for fid in fields:
                f = get(fid)
                if f is not None and f.get("visibility") == "public" and f.get("name"):
                    out.add(f"field {'::'.join(path)}.{f['name']}")
            impls = inner["struct"]["impls"]
        elif kind == "enum":
            for vid in inner["enum"]["variants"]:
                v = get(vid)
                if v is not None:
                    out.add(f"variant {'::'.join(path)}::{v['name']}")
            impls = inner["enum"]["impls"]
        elif kind == "union":
            impls = inner["union"]["impls"]
        else:
            impls = []
        for iid in impls:
            imp = get(iid)
            if imp is None or imp["inner"]["impl"].get("trait") is not None:
                continue
            for aid in imp["inner"]["impl"]["items"]:
                a = get(aid)
                if a is not None and a.get("visibility") == "public" and a.get("name"):
                    akind = next(iter(a["inner"]))
                    out.add(f"{akind} {'::'.join(path)}::{a['name']}")

    root = get(doc["root"])
    walk(doc["root"], [root["name"]])
    return sorted(out)


# The most items a crate may make public (issue 42: the core under 150), counted as the
# Rust Reference counts items: a struct's fields and an enum's variants are parts of their
# item, not items of their own (the lists show them too, so that they are reviewed).
LIMITS = {"seekless-core": 150}


def counted(listed):
    """The listed entries, and the items among them (fields and variants left out)."""
    own = [line for line in listed if line.split(" ", 1)[0] not in ("field", "variant")]
    return f"{len(listed)} entries, {len(own)} items", len(own)


def main():
    write = "--write" in sys.argv[1:]
    os.makedirs(os.path.join(ROOT, "api"), exist_ok=True)
    differ = over = False
    for package in CRATES:
        doc = rustdoc_json(package)
        listed = items(doc)
        said, own = counted(listed)
        limit = LIMITS.get(package)
        if limit is not None and own >= limit:
            over = True
            print(f"public-api: {package}: {own} public items, the limit is under {limit}",
                  file=sys.stderr)
        path = os.path.join(ROOT, "api", f"{package}.txt")
        # The format of rustdoc's JSON changes between toolchains: the lists say which one
        # made them, and another one is not compared (said), rather than failing for what
        # is the format's change, not the API's.
        header = f"# rustdoc JSON format {doc.get('format_version')}\n"
        text = header + "".join(line + "\n" for line in listed)
        if write:
            with open(path, "w") as f:
                f.write(text)
            print(f"public-api: {package}: {said} -> api/{package}.txt")
            continue
        old = open(path).read() if os.path.exists(path) else ""
        if old and not old.startswith(header):
            print(f"public-api: {package}: api/{package}.txt was made with another rustdoc "
                  f"({old.splitlines()[0]}; this one is {header.strip()}): not compared")
            continue
        if old != text:
            differ = True
            before, after = set(old.splitlines()[1:]), set(listed)
            for line in sorted(after - before):
                print(f"public-api: {package}: + {line}", file=sys.stderr)
            for line in sorted(before - after):
                print(f"public-api: {package}: - {line}", file=sys.stderr)
        else:
            print(f"public-api: {package}: {said}, as api/{package}.txt lists")
    if differ:
        print("public-api: the public API changed: if that is meant, run "
              "`python3 ci/public-api.py --write` and commit api/*.txt with the change",
              file=sys.stderr)
    return 1 if differ or over else 0


if __name__ == "__main__":
    sys.exit(main())
