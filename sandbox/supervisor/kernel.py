# The persistent Python interpreter behind the supervisor's `python` op
# (sandbox/supervisor/kernel.h): reads calls on stdin ("<n>\n" then n bytes of
# code), runs each in one namespace (a final expression's value is printed),
# flushes stdout and stderr, then writes "<exit code>\n" on fd 3. Embedded into
# the supervisor at build time (the Makefile's build/supervisor/kernel_source.c).
import ast, os, sys, traceback
status = os.fdopen(3, 'w')
namespace = {'__name__': '__main__', '__builtins__': __builtins__}
source = sys.stdin.buffer
while True:
    line = source.readline()
    if not line:
        break
    code = source.read(int(line)).decode('utf-8', 'replace')
    exit_code = 0
    try:
        tree = ast.parse(code, '<python>')
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, '<python>', 'exec'), namespace)
        if last is not None:
            value = eval(compile(last, '<python>', 'eval'), namespace)
            if value is not None:
                print(repr(value))
    except SystemExit as e:
        exit_code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException as e:
        exit_code = 1
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != '<python>':
            tb = tb.tb_next
        traceback.print_exception(type(e), e, tb)
    sys.stdout.flush()
    sys.stderr.flush()
    status.write('%d\n' % exit_code)
    status.flush()
