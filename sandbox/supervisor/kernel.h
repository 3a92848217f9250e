/* kernel: the persistent Python interpreter behind the `python` op, as
 * Python source the supervisor passes to `python3 -u -c`: kernel.py, embedded
 * at build time as kernel_source (the Makefile writes
 * build/supervisor/kernel_source.c from it). It reads calls on its stdin
 * ("<n>\n" then n bytes of code), runs each in one namespace (the value of a
 * final expression is printed), flushes stdout/stderr, then writes "<exit
 * code>\n" on fd 3. */
#ifndef SV_KERNEL_H
#define SV_KERNEL_H

extern const char kernel_source[];

#endif
