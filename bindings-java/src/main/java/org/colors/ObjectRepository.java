package org.colors;

/**
 * A named root of the shared heap: any process can {@link #get()} what another one
 * {@link #set(Object)}. Whatever a repository holds stays alive. A repository is also a monitor
 * ({@link SharedMemory#lock(Object)}), which gives the paper's idiom:
 *
 * <pre>{@code
 * ObjectRepository r = SharedMemory.findOrCreateRepository("db");
 * try (SharedMonitor m = SharedMemory.lock(r)) {     // client
 *   while (r.get() == null) m.await();
 * }
 * try (SharedMonitor m = SharedMemory.lock(r)) {     // server
 *   r.set(root);
 *   m.signalAll();
 * }
 * }</pre>
 *
 * <p>Obtained from {@link SharedMemory#findOrCreateRepository(String)}; one instance per name
 * until the repository is deleted ({@link SharedMemory#deleteRepository(String)}): from then on
 * this instance throws {@link SharedKeyException}, and findOrCreateRepository gives a new one.
 * After a detach they are looked up again on first use.
 */
public final class ObjectRepository {
  private final String name;
  private final long ptr;

  ObjectRepository(String name, long ptr) {
    this.name = name;
    this.ptr = ptr;
  }

  /**
   * The name (key) of this repository.
   *
   * @return the name
   */
  public String name() {
    return name;
  }

  /**
   * The value stored in the repository.
   *
   * @return the value ({@code null} if nothing was set): a proxy of a shared object or a scalar
   * @throws ServerGoneException if the server is gone
   */
  public Object get() {
    SharedMemory.ensureAttached();
    return Native.repoGet(ptr);
  }

  /**
   * Stores a shared object (or a scalar, String or byte[], which is copied in) in the repository.
   *
   * @param value the value; a private collection throws {@link TypeMismatchException}
   */
  public void set(Object value) {
    int t = Codec.tag(value);
    SharedMemory.ensureAttached();
    Native.repoSet(ptr, t, Codec.bits(value, t), Codec.obj(value, t));
  }

  long monitorAddress() {
    SharedMemory.ensureAttached();
    return Native.repoAddress(ptr);
  }

  /**
   * Whether this handle's repository has been deleted (by any process); a deleted one throws
   * {@link SharedKeyException} from every operation.
   *
   * @return true once deleted
   */
  public boolean deleted() {
    SharedMemory.ensureAttached();
    return Native.repoDeleted(ptr);
  }

  @Override
  public String toString() {
    return "ObjectRepository[" + name + "]";
  }
}
