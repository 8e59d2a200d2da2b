#!/usr/bin/env python3
"""cubin_text.py -- one line per kernel of a cubin (nvcc -cubin): the sha256 of its machine code
(the ELF section .text.<mangled name>) and its size, sorted by name. Two builds' outputs diffed
say which kernels changed a byte (no cuobjdump needed).
    python3 kernels/dev/cubin_text.py a.cubin [b.cubin ...]"""
import hashlib
import struct
import sys


def text_sections(path):
    data = open(path, "rb").read()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise SystemExit(f"{path}: not a 64-bit ELF (a cubin from nvcc -cubin)")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    heads = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab = heads[shstrndx]
    names = data[strtab[4]:strtab[4] + strtab[5]]
    for h in heads:
        name = names[h[0]:names.index(b"\0", h[0])].decode()
        if name.startswith(".text."):
            yield name[len(".text."):], data[h[4]:h[4] + h[5]]


def main():
    for path in sys.argv[1:]:
        for name, code in sorted(text_sections(path)):
            print(f"{hashlib.sha256(code).hexdigest()[:16]} {len(code):8d} {name}")


if __name__ == "__main__":
    main()
