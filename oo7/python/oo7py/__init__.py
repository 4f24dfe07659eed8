"""OO7 (SPEC: /work/shared/oo7/SPEC.md) in Python, over two models built by one generator.

* ``params``   the SPEC's parameters and its SplitMix64 generator;
* ``schema``   the seven classes (``oo7.Module`` ... ``oo7.Database``), plain ``__dict__`` classes
               registered with colors_shm under their shared names, fields in the SPEC's order;
* ``models``   PRIVATE (instances of those classes, Python lists) and SHARED (the same classes
               allocated in the heap, shared lists): how to make an object and a list, and how
               updates run (a transaction per composite part visit in the shared model);
* ``build``    the SPEC's draw order, run once over either model;
* ``checks``   the FNV fold: fingerprint and visit order, and the SPEC's expected values;
* ``ops``      T1, T6, T2a, T2b, T2c and Q7, one code for both models (the shared proxies are
               instances of subclasses of the private classes: same attribute names, lists that
               iterate alike);
* ``publish``  repository names and the publish / fetch of ``oo7.Database``;
* ``indexes``  the parts-by-id and parts-by-date indexes, shared (sorted maps published beside the
               database) or private (``dict``, ``SortedDict``), and their check;
* ``queries``  Q1, Q2, Q3 over either model's indexes.
"""
