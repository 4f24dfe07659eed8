// The demo of `make demo`: two processes share live objects through colors-server.
//
//   employee-demo hr       creates Employee objects in the shared heap, publishes them in the
//                          "staff" repository and waits on its monitor for the payroll's answer
//   employee-demo payroll  waits until the staff list appears, gives everyone a raise in place,
//                          adds a field to one employee (schema evolution) and reports back
//                          through the "payroll-done" channel
//
// Nothing is serialized: both processes read and write the same objects.
#include <colors/colors.hpp>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

using namespace colors;

static Class employee_class() {
  return define_class("demo.Employee", {{"name", TypeKind::kString, ""}, {"salary", TypeKind::kFloat, ""}});
}

static int hr() {
  List staff = new_list();
  const char* names[] = {"Smith", "Jones", "Garcia", "Chen"};
  double salary = 100.0;
  for (const char* n : names) {
    Object e = new_object(employee_class());
    e.set("name", n);
    e.set("salary", salary);
    salary += 20.0;
    staff.append(e);
  }
  Repository repo = repository("staff");
  {
    Monitor m(repo);
    repo.set(staff);
    m.notify_all();
  }
  std::printf("[hr %d] published %zu employees in repository 'staff'\n", getpid(), staff.size());
  std::optional<Value> done = channel("payroll-done").receive(10000);
  if (!done) {
    std::fprintf(stderr, "[hr] payroll did not answer within 10 s\n");
    return 1;
  }
  std::printf("[hr %d] payroll says: %s\n", getpid(), done->as_string().c_str());
  for (const Value& v : staff.items()) {
    Object e(v);
    std::string extra = e.has_field("state") ? "  state=" + e.get("state").as_string() : "";
    std::printf("[hr %d]   %-7s salary=%.1f  (class %s v%u)%s\n", getpid(), e.get("name").as_string().c_str(),
                e.get("salary").as_float(), e.cls().name().c_str(), e.cls().version(), extra.c_str());
  }
  // Unpublish and drop everything: the server's collector takes it back.
  repo.set(Value());
  staff = List();
  collect();
  GcStats g = collect();
  std::printf("[hr %d] after dropping the staff list: gc cycle %llu freed %llu objects (%llu bytes) in %.2f ms\n", getpid(),
              static_cast<unsigned long long>(g.cycle), static_cast<unsigned long long>(g.objects_freed),
              static_cast<unsigned long long>(g.bytes_freed), g.total_ns / 1e6);
  return 0;
}

static int payroll() {
  Repository repo = repository("staff");
  Value staff;
  {
    Monitor m(repo);
    while ((staff = repo.get()).is_null()) {
      if (!m.wait(10000)) {
        std::fprintf(stderr, "[payroll] no staff list within 10 s\n");
        return 1;
      }
    }
  }
  List list(staff);
  for (const Value& v : list.items()) {
    Object e(v);
    e.set("salary", e.get("salary").as_float() * 1.1);
  }
  Object first(list[0]);
  first.add_field({"state", TypeKind::kString, ""});  // a new version of demo.Employee, same object
  first.set("state", "NY");
  std::printf("[payroll %d] raised %zu salaries by 10%%, moved %s to NY\n", getpid(), list.size(),
              first.get("name").as_string().c_str());
  channel("payroll-done").send(Value("raises applied"));
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 2 || (std::strcmp(argv[1], "hr") != 0 && std::strcmp(argv[1], "payroll") != 0)) {
    std::fprintf(stderr, "usage: employee-demo hr|payroll   (COLORS_SOCKET selects the server)\n");
    return 2;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // lines appear in order with the other processes'
  try {
    attach();
    int rc = std::strcmp(argv[1], "hr") == 0 ? hr() : payroll();
    detach();
    return rc;
  } catch (const Error& e) {
    std::fprintf(stderr, "employee-demo %s: %s\n", argv[1], e.what());
    return 1;
  }
}
