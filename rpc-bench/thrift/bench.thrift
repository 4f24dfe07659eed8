// Schema of the rpc-bench workload (section 6.2 of the CoLoRS paper) for Apache Thrift.
// Every method takes a list and returns a list of the same shape and size.
namespace java bench.thrift
namespace py bench_thrift

// A binary-tree node: four scalar fields and two children (unset at the leaves).
struct Node {
  1: i64 i,
  2: double f,
  3: bool b,
  4: string s,
  5: optional Node left,
  6: optional Node right,
}

// Trees of every depth go through trees(): the server mirrors the input's shape.
service Bench {
  list<bool> bools(1: list<bool> v),
  list<i64> ints(1: list<i64> v),
  list<double> floats(1: list<double> v),
  list<string> strings(1: list<string> v),
  list<Node> trees(1: list<Node> v),
}
