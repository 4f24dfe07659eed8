package org.colors.rpc;

import org.colors.SharedMemoryException;

/**
 * The handler of a remote call failed (colors::RemoteError): {@link #getRemoteType()} is the
 * error's type in the server's language (for a Java server the fully qualified class name of the
 * exception its method threw, e.g. {@code "java.lang.IllegalStateException"}; for a Python server
 * e.g. {@code "ValueError"}), {@link #getRemoteMessage()} its message. {@link #getMessage()} is
 * {@code "type: message"}.
 *
 * <p>A Java handler that lets a {@code RemoteException} escape (from a nested remote call)
 * reports the nested remote type and message to its own caller, as the C++ servers do.
 */
public class RemoteException extends SharedMemoryException {
  private static final long serialVersionUID = 1L;
  private final String remoteType;
  private final String remoteMessage;

  /**
   * Creates the exception with the message {@code "remoteType: remoteMessage"}.
   *
   * @param remoteType the remote error's type name
   * @param remoteMessage the remote error's message
   */
  public RemoteException(String remoteType, String remoteMessage) {
    this(remoteType + ": " + remoteMessage, remoteType, remoteMessage);
  }

  /**
   * Creates the exception (called by the native library).
   *
   * @param message the whole message
   * @param remoteType the remote error's type name
   * @param remoteMessage the remote error's message
   */
  public RemoteException(String message, String remoteType, String remoteMessage) {
    super(message);
    this.remoteType = remoteType;
    this.remoteMessage = remoteMessage;
  }

  /**
   * The type of the error in the server's language.
   *
   * @return e.g. {@code "java.lang.IllegalArgumentException"} or {@code "ValueError"}
   */
  public String getRemoteType() {
    return remoteType;
  }

  /**
   * The message of the remote error.
   *
   * @return the message ({@code ""} if it had none)
   */
  public String getRemoteMessage() {
    return remoteMessage;
  }
}
