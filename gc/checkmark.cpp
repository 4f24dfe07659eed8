// The checkmark verifier (after Go's gccheckmark): a stop-the-world re-mark, with private mark
// bits, from the same roots; every object it reaches must have been marked (or be recent) by the
// concurrent mark of that cycle, or the sweep would free a reachable object.
#include <cstdio>
#include <string>
#include <unordered_set>
#include <vector>

#include "channel.hpp"
#include "classes.hpp"
#include "collector.hpp"
#include "objects.hpp"
#include "repository.hpp"

namespace colors::gc {

using namespace colors::detail;

std::vector<std::string> checkmark(Metadata* m, std::uint8_t epoch) {
  std::vector<std::string> errors;
  std::unordered_set<Word> seen;
  std::vector<Word> stack;
  auto push = [&](Word w, const char* from) {
    if (!is_ref(w)) return;
    if (w < m->objects_begin || w >= m->objects_end) {
      errors.push_back(std::string(from) + ": reference outside the objects space");
      return;
    }
    if (!seen.insert(w).second) return;
    BlockHeader* h = header_at(w);
    if (BlockHeader::kind_of(h->load()) != BlockKind::kObject) {
      char b[128];
      std::snprintf(b, sizeof b, "%s: reachable 0x%lx is not an object (kind %d)", from, static_cast<unsigned long>(w),
                    static_cast<int>(BlockHeader::kind_of(h->load())));
      errors.push_back(b);
      return;
    }
    if (h->marked.load() != epoch && h->recent.load() != epoch) {
      char b[160];
      std::snprintf(b, sizeof b, "%s: reachable object 0x%lx (%s) is neither marked nor recent in epoch %u", from,
                    static_cast<unsigned long>(w), std::string(type_name(class_of(w)->kind)).c_str(), epoch);
      errors.push_back(b);
    }
    stack.push_back(w);
  };
  for (const ClientSlot& cs : m->clients) {
    if (cs.state.load() != static_cast<std::uint32_t>(ClientState::kFree)) push(cs.roots.load(), "client root table");
  }
  for_each_repository(m, [&](RepositoryRecord* r) { push(r->root.load(), "repository"); });
  for_each_channel(m, [&](ChannelRecord* c) { for_each_channel_slot(c, [&](std::atomic<Word>*, Word v) { push(v, "channel"); }); });
  while (!stack.empty() && errors.size() < 50) {
    Word o = stack.back();
    stack.pop_back();
    ClassRecord* c = class_of(o);
    switch (c->kind) {
      case TypeKind::kArray:
      case TypeKind::kExtension:
      case TypeKind::kRootChunk: {
        auto* a = reinterpret_cast<ArrayObject*>(o);
        for (std::size_t i = 0; i < a->capacity; ++i) push(a->slots[i].load(), "array slot");
        break;
      }
      case TypeKind::kList: push(reinterpret_cast<ListObject*>(o)->array.load(), "list storage"); break;
      case TypeKind::kSet:
      case TypeKind::kMap: push(reinterpret_cast<HashObject*>(o)->table.load(), "hash storage"); break;
      case TypeKind::kSortedMap: push(reinterpret_cast<SortedMapObject*>(o)->root.load(), "sorted map root"); break;
      case TypeKind::kTable: {
        auto* t = reinterpret_cast<TableObject*>(o);
        for (std::size_t i = 0; i < t->capacity; ++i) {
          push(t->entries[i].key.load(), "table key");
          push(t->entries[i].value.load(), "table value");
        }
        break;
      }
      case TypeKind::kObject: {
        auto* u = reinterpret_cast<UserObject*>(o);
        push(u->extension.load(), "extension");
        std::size_t n = inline_slots(o);
        for (std::size_t i = 0; i < n; ++i) push(u->slots[i].load(), "field");
        break;
      }
      default: break;
    }
  }
  return errors;
}

}  // namespace colors::gc
