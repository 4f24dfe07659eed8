package org.colors;

import java.util.AbstractMap;
import java.util.Map;

/**
 * An entry handed out by a shared map's iteration (a snapshot or a batch) whose {@code setValue}
 * writes through to the map it came from, as {@code java.util} maps' entries do.
 */
final class LiveEntry extends AbstractMap.SimpleEntry<Object, Object> {
  private static final long serialVersionUID = 1L;
  private final transient Map<Object, Object> map;

  LiveEntry(Map<Object, Object> map, Object key, Object value) {
    super(key, value);
    this.map = map;
  }

  @Override
  public Object setValue(Object value) {
    map.put(getKey(), value);
    return super.setValue(value);
  }
}
