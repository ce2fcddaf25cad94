#!/usr/bin/env python3
"""Checks a JSON answer the way faas-cli's json.Unmarshal would decode it into its Go type.

usage: gotypes.py TYPE FILE    TYPE: FunctionStatus, []FunctionStatus, GatewayInfo, []Secret
                               or []string

The types are faas-provider's types.FunctionStatus and types.Secret and the gateway's
types.GatewayInfo, as vendored by faas-cli 0.18.12 (types.Secret: also at its 2023 commit
9424845); []string is /system/namespaces' answer. encoding/json ignores unknown fields and
nulls, and fails on a value of the wrong JSON type: a string where a number goes, a fraction or a negative number
for a uint64, a timestamp that is not RFC 3339. Exit 0 when it would decode; else the first
field that would not, on stderr, and exit 1.
"""
import json
import re
import sys

RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


def scalar(name, ok):
    """a checker for one Go type: the error at path, or None"""
    def check(v, path):
        return None if ok(v) else f"{path}: {json.dumps(v)[:80]} does not decode into {name}"
    return check


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


string = scalar("string", lambda v: isinstance(v, str))
number = scalar("float64", lambda v: is_int(v) or isinstance(v, float))
uint64 = scalar("uint64", lambda v: is_int(v) and 0 <= v < 2**64)
boolean = scalar("bool", lambda v: isinstance(v, bool))
timestamp = scalar("time.Time (RFC 3339)", lambda v: isinstance(v, str) and RFC3339.match(v))
map_of_strings = scalar("map[string]string",
                        lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()))
list_of_strings = scalar("[]string",
                         lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v))


def struct(fields):
    """a Go struct: unknown fields and nulls are ignored, as encoding/json does"""
    def check(v, path):
        if not isinstance(v, dict):
            return f"{path}: {type(v).__name__} does not decode into a struct"
        for k, t in fields.items():
            err = t(v[k], f"{path}.{k}") if v.get(k) is not None else None
            if err:
                return err
        return None
    return check


FunctionResources = struct({"memory": string, "cpu": string, "nvidia.com/gpu": string,
                            "amd.com/gpu": string, "intel.com/gpu": string})
FunctionUsage = struct({"cpu": number, "totalMemoryBytes": number})
FunctionStatus = struct({
    "name": string, "image": string, "namespace": string, "envProcess": string,
    "envVars": map_of_strings, "constraints": list_of_strings, "secrets": list_of_strings,
    "labels": map_of_strings, "annotations": map_of_strings, "limits": FunctionResources,
    "requests": FunctionResources, "readOnlyRootFilesystem": boolean,
    "invocationCount": number, "replicas": uint64, "availableReplicas": uint64,
    "createdAt": timestamp, "usage": FunctionUsage,
})
# []byte: encoding/json's base64 (standard alphabet, padded)
byte_slice = scalar("[]byte (base64)", lambda v: isinstance(v, str) and
                    re.match(r"^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$", v))
Secret = struct({"name": string, "namespace": string, "value": string, "rawValue": byte_slice})
VersionInfo = struct({"commit_message": string, "sha": string, "release": string})
ProviderInfo = struct({"provider": string, "version": VersionInfo, "orchestration": string})
GatewayInfo = struct({"provider": ProviderInfo, "version": VersionInfo, "arch": string})


def main():
    kind, path = sys.argv[1], sys.argv[2]
    try:
        v = json.load(open(path))
    except ValueError as e:
        sys.exit(f"not JSON: {e}")
    arrays = {"[]FunctionStatus": FunctionStatus, "[]Secret": Secret, "[]string": string}
    if kind in arrays:
        if not isinstance(v, list):
            sys.exit(f"an array, not {type(v).__name__}")
        errs = [arrays[kind](x, f"[{i}]") for i, x in enumerate(v)]
    else:
        errs = [{"FunctionStatus": FunctionStatus, "GatewayInfo": GatewayInfo}[kind](v, kind)]
    errs = [e for e in errs if e]
    if errs:
        sys.exit(errs[0])


if __name__ == "__main__":
    main()
