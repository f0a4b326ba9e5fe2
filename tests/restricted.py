"""Run a command the way a restricted runner would run it: the kernel refuses new namespaces
(as Docker's default seccomp profile and Ubuntu's restricted user namespaces do), and with
``--no-landlock`` Landlock too (an older kernel, or one built without it).

    python tests/restricted.py [--no-landlock] -- COMMAND ...

A seccomp filter answers EPERM to ``unshare`` and to ``clone`` with any namespace flag, and
ENOSYS to ``clone3`` (whose flags it cannot read, so the C library falls back to ``clone``);
with ``--no-landlock``, ENOSYS to ``landlock_create_ruleset``. The filter is inherited by
everything the command starts, the grader's children included: ``.ci/run`` runs the isolation
suites under it, as root and as an ordinary user, so the container and restricted-runner modes
are tested on every change. Standard library only (and libseccomp, as the grader uses it).
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys

NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000,
                   0x40000000)  # mount, cgroup, uts, ipc, user, pid, net
SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_CMP_MASKED_EQ = 7
PR_SET_NO_NEW_PRIVS = 38


class _ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64),
                ("datum_b", ctypes.c_uint64)]


def refuse(no_landlock: bool) -> None:
    seccomp = ctypes.CDLL("libseccomp.so.2", use_errno=True)
    seccomp.seccomp_init.restype = ctypes.c_void_p
    seccomp.seccomp_init.argtypes = [ctypes.c_uint32]
    seccomp.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    seccomp.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int,
                                               ctypes.c_uint, ctypes.POINTER(_ArgCmp)]
    seccomp.seccomp_load.argtypes = [ctypes.c_void_p]
    context = seccomp.seccomp_init(SCMP_ACT_ALLOW)

    def add(name: bytes, code: int, flag: int | None = None) -> None:
        number = seccomp.seccomp_syscall_resolve_name(name)
        action = 0x00050000 | code  # SCMP_ACT_ERRNO(code)
        if flag is None:
            done = seccomp.seccomp_rule_add_array(context, action, number, 0, None)
        else:
            rule = (_ArgCmp * 1)(_ArgCmp(0, SCMP_CMP_MASKED_EQ, flag, flag))
            done = seccomp.seccomp_rule_add_array(context, action, number, 1, rule)
        if done != 0:
            raise OSError(-done, f"seccomp rule for {name.decode()}")

    for flag in NAMESPACE_FLAGS:
        add(b"unshare", errno.EPERM, flag)
        add(b"clone", errno.EPERM, flag)
    add(b"clone3", errno.ENOSYS)
    if no_landlock:
        add(b"landlock_create_ruleset", errno.ENOSYS)
    ctypes.CDLL(None).prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    if seccomp.seccomp_load(context) != 0:
        raise OSError("the seccomp filter could not be loaded")


def main(argv: list[str]) -> None:
    if "--" not in argv:
        sys.exit(__doc__)
    options, command = argv[: argv.index("--")], argv[argv.index("--") + 1 :]
    refuse("--no-landlock" in options)
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
